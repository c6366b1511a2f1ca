"""An upstream "model" that decides its next reply from the request it receives."""

from __future__ import annotations

from collections.abc import Callable

from support.upstream import Reply, ScriptedUpstream


class RespondingUpstream(ScriptedUpstream):
    """Queued replies first (as ScriptedUpstream), then ``responder(request_json)``."""

    def __init__(self, responder: Callable[[dict], Reply]) -> None:
        super().__init__()
        self.responder = responder

    @property
    def default(self) -> Reply:
        return self.responder(self.requests[-1]["json"])

    @default.setter
    def default(self, value: Reply) -> None:  # the base class assigns one; ours is computed
        pass


def stubborn(tool: str = "read_file", args: str = '{"path": "a.txt"}') -> Callable[[dict], Reply]:
    """Calls the same tool with the same arguments forever, whatever it is told."""
    return lambda request: Reply(tool_calls=[(tool, args)])


def recovering(
    tool: str = "read_file", args: str = '{"path": "a.txt"}', then: Reply | None = None
) -> Callable[[dict], Reply]:
    """Loops until it reads a LoopGuard observation or anchor, then does ``then``."""

    def respond(request: dict) -> Reply:
        if any(_from_loopguard(m) for m in request.get("messages", [])):
            return then or Reply(content="Stopping: here is what I found.")
        return Reply(tool_calls=[(tool, args)])

    return respond


def _from_loopguard(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.lower().startswith(("[loopguard]",))
