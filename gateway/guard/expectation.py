"""Seed 000 section 6.2 on the response path: a turn that requires a tool gets it, or a warning.

When the request's turn requires a tool (the ``required_tool`` detector's rules) that the run has
not called yet, a model answer without any tool call is held back: the gateway re-asks with a
corrective user message, at most ``max_retries`` times, then lets the last answer through with
a warning prepended to its content. An answer with tool calls goes out as is (the agent is still
working; the next request judges again). This module holds the decisions and the body edits;
``gateway.server.chat_expect`` does the upstream calls.

Policy modes: ``shadow`` changes nothing (no guard); ``max_action: warn`` skips the re-asks and
only prepends the warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.detectors import required_tool
from gateway.detectors.base import Finding
from gateway.guard.request import RequestPlan
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, Judgement
from gateway.protocols.chat.chunks import Envelope, content_chunk
from gateway.protocols.chat.parse import tool_calls_from_message
from gateway.protocols.chat.sse import SSEDecoder, data_event


@dataclass(slots=True)
class TurnGuard:
    """One request's expectation and how many plain answers the model has given so far."""

    policy: EffectivePolicy
    expectation: required_tool.Expectation
    max_retries: int
    misses: int = 0

    def miss(self) -> bool:
        """Count a plain answer; True while a corrective re-ask is still allowed."""
        self.misses += 1
        return self.misses <= self.max_retries

    @property
    def finding(self) -> Finding:
        return required_tool.finding(self.expectation, max(self.misses, 1))

    def judgement(self, action: Action) -> Judgement:
        return Judgement(action, action, self.finding, (self.finding,))

    def corrective(self, answer: str) -> list[dict[str, Any]]:
        """The model's answer and the corrective user message, appended to what it saw."""
        text = self.policy.render("reask", self.finding)
        return [{"role": "assistant", "content": answer}, {"role": "user", "content": text}]

    def warning(self) -> str:
        return self.policy.render("warn", self.finding)


def for_plan(plan: RequestPlan) -> TurnGuard | None:
    """The guard for this request, or None: no rules, shadow mode, nothing required, or the run
    already made the call (then nothing is held, streams included)."""
    settings = plan.policy.detectors.get(required_tool.NAME)
    if not isinstance(settings, required_tool.RequiredToolSettings) or plan.policy.shadow:
        return None
    expectation = required_tool.resolve(plan.trace.turns, settings)
    if expectation is None or required_tool.satisfied(expectation, plan.trace.events):
        return None
    retries = settings.max_retries if plan.policy.max_action >= Action.REJECT else 0
    return TurnGuard(plan.policy, expectation, retries)


@dataclass(frozen=True, slots=True)
class Answer:
    calls: bool  # the model called a tool: not a final answer
    text: str  # choice 0's content


# --- non-streamed answers --------------------------------------------------------------------


def unary_answer(content: bytes) -> Answer | None:
    """Choice 0 of a chat.completion; None when it cannot be read (it goes out untouched)."""
    data = orjson.loads(content)
    message = data["choices"][0]["message"]
    text = message.get("content")
    return Answer(bool(tool_calls_from_message(message)), text if isinstance(text, str) else "")


def unary_with_warning(content: bytes, warning: str) -> bytes:
    data = orjson.loads(content)
    message = data["choices"][0]["message"]
    text = message.get("content")
    message["content"] = warning + "\n\n" + (text if isinstance(text, str) else "")
    return orjson.dumps(data)


# --- streamed answers ------------------------------------------------------------------------


def stream_answer(stream: bytes) -> Answer | None:
    """What a complete client-bound SSE stream says for choice 0; None when it holds an error
    event or no readable chunk (it goes out untouched)."""
    calls, parts, readable = False, [], False
    for _raw, chunk in _events(stream):
        if chunk is None:
            continue
        if "error" in chunk:
            return None
        readable = True
        delta = _delta(chunk)
        calls = calls or bool(delta.get("tool_calls") or delta.get("function_call"))
        if isinstance(delta.get("content"), str):
            parts.append(delta["content"])
    return Answer(calls, "".join(parts)) if readable else None


def stream_with_warning(stream: bytes, warning: str) -> bytes:
    """The stream with one content delta holding the warning before choice 0's first content
    (or its finish), in the stream's own envelope, so clients accumulate warning + answer."""
    events = _events(stream)
    role_seen = False
    for position, (_raw, chunk) in enumerate(events):
        if chunk is None:
            continue
        delta, choice = _delta(chunk), _choice(chunk)
        if delta.get("content") or (choice is not None and choice.get("finish_reason")):
            piece = content_chunk(Envelope.from_chunk(chunk), warning + "\n\n", role=not role_seen)
            raws = [raw for raw, _ in events]
            return b"".join([*raws[:position], data_event(piece), *raws[position:]])
        role_seen = role_seen or "role" in delta
    return stream


def _events(stream: bytes) -> list[tuple[bytes, dict[str, Any] | None]]:
    decoder = SSEDecoder()
    out = []
    for event in [*decoder.feed(stream), *decoder.flush()]:
        chunk = None
        if event.data is not None and not event.is_done:
            try:
                chunk = orjson.loads(event.data)
            except orjson.JSONDecodeError:
                chunk = None
        out.append((event.raw, chunk if isinstance(chunk, dict) else None))
    return out


def _choice(chunk: dict[str, Any]) -> dict[str, Any] | None:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return None
    return next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)


def _delta(chunk: dict[str, Any]) -> dict[str, Any]:
    choice = _choice(chunk)
    delta = choice.get("delta") if choice is not None else None
    return delta if isinstance(delta, dict) else {}
