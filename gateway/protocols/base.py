"""The one interface every protocol adapter implements.

An adapter is the only code that knows a wire format (OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages). The guard (trace, detectors, policy, interventions, state,
audit) and the server's pipeline talk to adapters only through these two protocols, so adding a
fourth protocol is one new package under ``gateway/protocols/`` plus one route line.

Vocabulary:
- ``payload``: the parsed request body (a dict), never mutated: every edit returns new objects.
- ``items``: the request's own ordered list of conversation entries (chat ``messages``,
  Responses ``input`` items, Anthropic ``messages``). ``Turn.index`` points into it, so an edit
  can name the entry it touches. Nothing outside an adapter looks inside an item.
- ``reply``: a parsed non-streaming upstream answer (a dict).

Rules every adapter keeps: never drop or reorder an item it did not mean to change (edits only
insert or append); never raise on a body it cannot read (return "nothing found" and let the
traffic through); build every reply it writes itself (termination, errors) in the exact shape
the protocol's official SDK accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from gateway.trace.model import Conversation, ToolCall

Judge = Callable[[ToolCall, int], bool]  # (proposed call, position in its round) -> let it through?


class RoundView(Protocol):
    """What a stream filter knows about the round of calls it judged (one upstream stream)."""

    kept: list[ToolCall]
    dropped: list[ToolCall]  # the refused call and every later call of the round
    rejected: ToolCall | None
    rejected_position: int | None
    judge_errors: list[Exception]  # the judge raised: the call was let through (fail-open)


class StreamFilter(Protocol):
    """Relays an upstream event stream to the client, holding each tool call until judged.

    Feed it upstream bytes; write what it returns to the client, in order. Text and every event
    that is not part of a tool call go out at once; a tool call's events are held until the call
    is complete and ``judge`` has seen it, then released untouched (byte for byte when nothing
    was dropped) or left out. The first refused call drops itself and every later call of the
    round. When every call was dropped, the stream's closing events are withheld and the
    pipeline decides: ``begin_continuation`` (a re-ask continues the same client stream) or
    ``terminate`` (end the client stream with a final text).
    """

    @property
    def round(self) -> RoundView: ...

    @property
    def needs_decision(self) -> bool:
        """Every call of the current round was dropped and nobody decided yet."""
        ...

    def feed(self, data: bytes) -> list[bytes]: ...

    def end_upstream(self) -> list[bytes]:
        """The upstream stream ended: judge and release what is still held."""
        ...

    def begin_continuation(self) -> None:
        """The next bytes fed come from a re-ask: relay them as the rest of the same stream."""
        ...

    def terminate(self, text: str) -> list[bytes]:
        """End the client stream with ``text`` as the assistant's final message."""
        ...

    def final(self) -> list[bytes]:
        """The client stream is over: whatever closing events are still owed, exactly once."""
        ...


class Adapter(Protocol):
    name: str  # "chat", "responses", "anthropic": metrics label, log field

    # --- the request ----------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        """The request's own conversation entries ([] when absent or unreadable)."""
        ...

    def conversation(self, payload: dict[str, Any], items: list[Any]) -> Conversation:
        """``items`` (the payload's own, or an edited copy) as neutral turns, with the tools the
        payload declares. ``Turn.index`` is the position in ``items``."""
        ...

    def with_items(self, payload: dict[str, Any], items: list[Any]) -> dict[str, Any]:
        """The payload carrying ``items`` in place of its own; every other field unchanged."""
        ...

    def stream(self, payload: dict[str, Any]) -> bool: ...

    def model(self, payload: dict[str, Any]) -> str: ...

    # --- interventions on the request (warn, replaced result, re-shown veto) ---------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        """Warn: put ``text`` where the model reads it before its next step (``placement`` is
        the policy's ``system`` | ``user`` | ``tool_result``), keeping the protocol's ordering
        rules (a tool result still follows its call)."""
        ...

    def replace_result(self, items: list[Any], index: int, text: str) -> list[Any]:
        """An executed call already at reject level: its result at ``index`` becomes ``text``."""
        ...

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        """The entries that show the model a refused call and the gateway's error observation in
        its place (chat: an assistant message + a tool message; Responses: a ``function_call`` +
        a ``function_call_output``; Anthropic: an assistant ``tool_use`` turn + a user
        ``tool_result`` turn with ``is_error: true``)."""
        ...

    # --- the reply --------------------------------------------------------------------------

    def proposed_calls(self, reply: dict[str, Any]) -> tuple[ToolCall, ...]:
        """The tool calls a non-streaming reply proposes, in order."""
        ...

    def keep_calls(self, reply: dict[str, Any], count: int) -> dict[str, Any]:
        """The reply with only its first ``count`` proposed calls."""
        ...

    def reply_text(self, reply: dict[str, Any]) -> str:
        """The assistant text of a non-streaming reply."""
        ...

    def stream_filter(self, judge: Judge) -> StreamFilter: ...

    # --- replies the gateway writes ---------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        """A complete, valid non-streaming reply whose only content is ``text``."""
        ...

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        """The same as a complete, valid event stream."""
        ...

    def error_body(self, message: str, type: str, code: str | None = None) -> dict[str, Any]:
        """An error in the protocol's own error shape."""
        ...

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload asking for a plain text answer: tools disabled the protocol's way."""
        ...
