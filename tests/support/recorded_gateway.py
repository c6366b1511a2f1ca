"""Recorded CLI traffic sent through a real gateway, as the CLI and its model would send it.

One gateway (a policy of the test's) guards every protocol the recordings speak, each in front of
a scripted model that answers what the recorded model did next: the next round's calls (the
gateway judges a proposed call as it judges a live one, and may refuse it), or text when the run
is over or the gateway asked for the final answer with the tools closed. The requests are the
recorded bodies, posted as the CLI posted them (its route, its User-Agent), one session per run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from support.anthropic_upstream import AnthropicUpstream, Said
from support.cli_runs import ChatUpstream, policy_file, read_audit, start_gateway, tools_closed
from support.clis_claude import tools_closed as anthropic_closed
from support.clis_codex import Reply as ResponsesReply
from support.gemini_upstream import GeminiUpstream
from support.gemini_upstream import Said as GeminiSaid
from support.gemini_upstream import tools_closed as gemini_closed
from support.recorded import Item, Recording, Wire
from support.responses_upstream import ResponsesUpstream
from support.servers import serve
from support.upstream import Reply

TEXT = "ok"  # what the model says when it calls nothing


@dataclass
class Next:
    """What the scripted model answers the next request: ``round``'s model entries (its calls,
    or an action written in its text; ``wire`` tells them apart), or plain text when None."""

    round: list[Item] | None = None
    wire: Wire | None = None


@dataclass(frozen=True)
class Answered:
    """What the gateway answered one replayed request: its status, the action it took and the
    profile it read the request through (its ``x-loopguard-*`` headers)."""

    status: int
    action: str
    profile: str


@dataclass
class Replayer:
    client: httpx.Client
    audit: Path  # the gateway's audit log
    next: Next = field(default_factory=Next)
    session: str = ""  # the session of the latest run

    def interventions(self) -> list[dict[str, Any]]:
        """The gateway's interventions in the latest run, in order."""
        return [e for e in read_audit(self.audit) if e.get("session", "").endswith(self.session)]

    def run(self, recording: Recording, rounds: list[list[Item]]) -> list[Answered]:
        """``rounds`` sent as a CLI of ``recording``'s version sends them: after each, the
        conversation so far, answered by the model with the next round's calls."""
        return self.send(recording, recording.run(rounds), [*rounds[1:], None])

    def send(
        self, recording: Recording, bodies: list[dict[str, Any]], answers: list[list[Item] | None]
    ) -> list[Answered]:
        """Each body posted in one session, the model answering ``answers[k]`` to body ``k``."""
        self.session = str(uuid.uuid4())
        headers = {
            **recording.headers,
            **recording.wire.auth(),
            "content-type": "application/json",
            "x-loopguard-session": self.session,
            # Each run is another task: the fleet recalls a stop for the next run of the same
            # agent opening the same way, and every run here opens with its recording's prompt.
            "x-loopguard-agent": f"run-{self.session}",
        }
        out = []
        self.next.wire = recording.wire
        for body, answer in zip(bodies, answers, strict=True):
            self.next.round = answer
            response = self.client.post(recording.path, content=json.dumps(body), headers=headers)
            out.append(
                Answered(
                    response.status_code,
                    response.headers.get("x-loopguard-action", ""),
                    response.headers.get("x-loopguard-profile", ""),
                )
            )
        return out


@contextmanager
def replaying(root: Path, policy_text: str) -> Iterator[Replayer]:
    """A gateway with ``policy_text`` in front of the scripted models of every protocol."""
    nxt = Next()
    chat = ChatUpstream(lambda body: _chat(nxt, body))
    responses = ResponsesUpstream(lambda conversation, body: _responses(nxt, body))
    messages = AnthropicUpstream(lambda body: _anthropic(nxt, body))
    gemini = GeminiUpstream(lambda body: _gemini(nxt, body))
    chat_route = next(r for r in chat.app.routes if getattr(r, "path", "") == "/v1/chat/completions")
    openai_style = Starlette(routes=[chat_route, *responses.app.routes])  # chat first: responses has a catch-all
    with ExitStack() as stack:
        openai_url = stack.enter_context(serve(openai_style))
        upstreams = {
            "base_url": openai_url + "/v1",
            "anthropic_base_url": stack.enter_context(serve(messages.app)),
            "gemini_base_url": stack.enter_context(serve(gemini.app)),
        }
        url = start_gateway(stack, upstreams, root / "audit.jsonl", policy_file(root, policy_text))
        client = stack.enter_context(httpx.Client(base_url=url, timeout=30))
        yield Replayer(client, root / "audit.jsonl", nxt)


def _model_entries(nxt: Next) -> list[Item]:
    if nxt.round is None or nxt.wire is None:
        return []
    return [i for i in nxt.round if nxt.wire.model_side(i)]


def _chat(nxt: Next, body: dict[str, Any]) -> Reply:
    entries = [] if tools_closed(body) and body.get("tools") else _model_entries(nxt)
    calls = [(c["function"]["name"], c["function"]["arguments"]) for e in entries for c in e.get("tool_calls") or []]
    text = next((e["content"] for e in entries if isinstance(e.get("content"), str) and e["content"]), None)
    return Reply(content=text if text or calls else TEXT, tool_calls=calls)


def _anthropic(nxt: Next, body: dict[str, Any]) -> Said:
    entries = [] if anthropic_closed(body) else _model_entries(nxt)
    blocks = [b for e in entries for b in (e.get("content") if isinstance(e.get("content"), list) else [])]
    calls = [(b["name"], b.get("input") or {}) for b in blocks if b.get("type") == "tool_use"]
    return Said(text=None if calls else TEXT, calls=calls)


def _responses(nxt: Next, body: dict[str, Any]) -> ResponsesReply:
    entries = [] if body.get("tool_choice") == "none" else _model_entries(nxt)
    custom = next(((e["name"], e["input"]) for e in entries if e.get("type") == "custom_tool_call"), None)
    if custom is not None:
        return ResponsesReply(custom=custom)
    calls = [(e["name"], e["arguments"]) for e in entries if e.get("type") == "function_call"]
    return ResponsesReply(None if calls else TEXT, calls=calls)


def _gemini(nxt: Next, body: dict[str, Any]) -> GeminiSaid:
    entries = [] if gemini_closed(body) else _model_entries(nxt)
    calls = [
        (p["functionCall"]["name"], p["functionCall"].get("args") or {})
        for e in entries
        for p in e.get("parts") or []
        if "functionCall" in p
    ]
    return GeminiSaid(text=None if calls else TEXT, calls=calls)
