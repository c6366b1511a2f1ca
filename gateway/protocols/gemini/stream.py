"""Gemini streams (``:streamGenerateContent?alt=sse``): each SSE event is a whole
``GenerateContentResponse`` chunk, and a ``functionCall`` part arrives whole in one chunk, so a
call is judged the moment its chunk arrives; nothing is held longer than that chunk.

A chunk whose calls are all kept goes out byte for byte. A refused call and every later call of
the round are cut from their chunks (a chunk left empty is dropped). When every call was dropped,
the chunk that ends the answer (``finishReason``) is withheld and the pipeline decides: a re-ask
(its chunks continue the same client stream) or ``terminate`` (a closing text chunk). Only
candidate 0 is judged. No SSE comment is ever written into these streams: google-genai reads a
line it does not know as JSON, so a comment would break the client's stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.protocols import codec
from gateway.protocols.base import Answer, Judge
from gateway.protocols.gemini.parse import calls_of, parts_of, text_of
from gateway.protocols.gemini.replies import termination
from gateway.protocols.sse import SSEDecoder, json_events
from gateway.trace.model import ToolCall


@dataclass(slots=True)
class Round:
    """One upstream stream's calls, as judged (``base.RoundView``)."""

    kept: list[ToolCall] = field(default_factory=list)
    dropped: list[ToolCall] = field(default_factory=list)
    rejected: ToolCall | None = None
    rejected_position: int | None = None
    judge_errors: list[Exception] = field(default_factory=list)
    withheld: dict[str, Any] | None = None  # the closing chunk, when every call was dropped
    ended: bool = False


def event(chunk: dict[str, Any]) -> bytes:
    return b"data: " + codec.dumps(chunk) + b"\r\n\r\n"


class GeminiStreamFilter:
    def __init__(self, judge: Judge, model: str = "") -> None:
        self._judge = judge
        self._model = model
        self._decoder = SSEDecoder()
        self.rounds = [Round()]
        self._usage: Any = None
        self._done = False  # terminated, or the closing chunk went out

    @property
    def round(self) -> Round:
        return self.rounds[-1]

    @property
    def reply(self) -> dict[str, Any] | None:
        return None

    @property
    def needs_decision(self) -> bool:
        state = self.round
        return bool(state.dropped) and not state.kept and (state.withheld is not None or state.ended) and not self._done

    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        for sse in self._decoder.feed(data):
            self._on_event(sse.raw, sse.data, out)
        return out

    def end_upstream(self) -> list[bytes]:
        out: list[bytes] = []
        if self.round.ended:
            return out
        for sse in self._decoder.flush():
            self._on_event(sse.raw, sse.data, out)
        self.round.ended = True
        return out

    def cut(self, upstream: bytes) -> list[bytes]:
        self._decoder = SSEDecoder()  # a partial chunk never reached the client: nothing is open
        self.round.ended = True
        return []

    def begin_continuation(self) -> None:
        self._decoder = SSEDecoder()
        self.rounds.append(Round())

    def terminate(self, text: str) -> list[bytes]:
        if self._done:
            return []
        self._done = True
        closing = termination(text, self._model)
        if self._usage is not None:
            closing["usageMetadata"] = self._usage
        return [event(closing)]

    def final(self) -> list[bytes]:
        withheld = self.round.withheld
        if self._done or withheld is None:
            return []
        self._done = True
        return [event(withheld)]

    def _on_event(self, raw: bytes, data: str | None, out: list[bytes]) -> None:
        if self._done:
            return
        try:
            chunk = codec.loads(data) if data else None
        except codec.DecodeError:
            chunk = None
        if not isinstance(chunk, dict):
            out.append(raw)  # not a chunk this filter reads: as it came
            return
        if isinstance(chunk.get("usageMetadata"), dict):
            self._usage = chunk["usageMetadata"]
        candidates = chunk.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict) else None
        if first is None:
            out.append(raw)
            return
        parts = parts_of(first.get("content"))
        kept_parts = self._judged(parts)
        closing = first.get("finishReason") is not None
        state = self.round
        if closing and state.dropped and not state.kept:
            state.withheld = _with_parts(chunk, first, kept_parts)
            return
        if len(kept_parts) == len(parts):
            out.append(raw)
        elif kept_parts or closing or len(candidates) > 1:
            out.append(event(_with_parts(chunk, first, kept_parts)))

    def _judged(self, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The parts that go out: a call refused here, and every call after one, is cut."""
        if not any(isinstance(p.get("functionCall"), dict) for p in parts):
            return parts
        state, kept = self.round, []
        for part in parts:
            calls = list(calls_of([part], f"s{len(self.rounds)}.{len(state.kept) + len(state.dropped)}"))
            if not calls:
                kept.append(part)
                continue
            call, position = calls[0], len(state.kept) + len(state.dropped)
            if state.rejected is None and self._keep(call, position):
                state.kept.append(call)
                kept.append(part)
                continue
            if state.rejected is None:
                state.rejected, state.rejected_position = call, position
            state.dropped.append(call)
        return kept

    def _keep(self, call: ToolCall, position: int) -> bool:
        try:
            return bool(self._judge(call, position))
        except Exception as exc:  # noqa: BLE001 - fail-open: a broken judge never breaks the stream
            self.round.judge_errors.append(exc)
            return True


def _with_parts(chunk: dict[str, Any], first: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    content = first.get("content") if isinstance(first.get("content"), dict) else {"role": "model"}
    return {**chunk, "candidates": [{**first, "content": {**content, "parts": parts}}, *chunk["candidates"][1:]]}


def stream_answer(stream: bytes) -> Answer | None:
    texts, calls, seen = [], False, False
    for _, chunk in json_events(stream):
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            return None
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
            continue
        seen = True
        content = candidates[0].get("content")
        texts.append(text_of(content))
        calls = calls or any(True for _ in calls_of(parts_of(content), 0))
    return Answer(calls, "".join(texts)) if seen else None


def stream_prepend_text(stream: bytes, text: str) -> bytes:
    lead = {"candidates": [{"content": {"role": "model", "parts": [{"text": text + "\n\n"}]}, "index": 0}]}
    return event(lead) + stream
