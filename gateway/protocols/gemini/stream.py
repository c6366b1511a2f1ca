"""Gemini streams (``:streamGenerateContent?alt=sse``): each SSE event is a whole
``GenerateContentResponse`` chunk, and a ``functionCall`` part arrives whole in one chunk, so a
call is judged the moment its chunk arrives; nothing is held longer than that chunk.

A chunk whose calls are all kept goes out byte for byte. A refused call and every later call of
the round are cut from their chunks (a chunk left empty is dropped). When every call was dropped,
the chunk that ends the answer (``finishReason``) is withheld and the pipeline decides: a re-ask
(its chunks continue the same client stream) or ``terminate`` (a closing text chunk). Only
candidate 0 is judged. No SSE comment is ever written into these streams: google-genai reads a
line it does not know as JSON, so a comment would break the client's stream.

Holding text (``options.hold_text``, a conversation already at warn level or above): chunks are
held until the round's fate is known, so a refused round's words are never shown. The first call
decides it (a kept first call keeps the round; a refused one drops every later call with it),
and a round without calls is kept when it ends. Held chunks get no keepalive (no comment fits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.protocols.base import Answer, Judge, StreamOptions
from gateway.protocols.gemini.parse import calls_of, parts_of, text_of
from gateway.protocols.gemini.replies import error_body, termination
from gateway.protocols.sse import SSEEvent, json_events
from gateway.protocols.streaming import StreamDriver
from gateway.trace.model import ToolCall
from gateway.wire import codec


@dataclass(frozen=True, slots=True)
class _Proposed:
    """A ``functionCall`` part as ``RoundState.settle`` takes it."""

    position: int
    call: ToolCall

    def to_call(self) -> ToolCall:
        return self.call


def event(chunk: dict[str, Any]) -> bytes:
    return b"data: " + codec.dumps(chunk) + b"\r\n\r\n"


class GeminiStreamFilter(StreamDriver):
    def __init__(self, judge: Judge, options: StreamOptions | None = None, model: str = "") -> None:
        self._model = model
        self._usage: Any = None  # the last usage the upstream reported, for a closing chunk
        super().__init__(judge, options)

    def _start_round(self) -> None:
        self._withheld: dict[str, Any] | None = None  # the closing chunk, every call dropped
        self._calls = 0
        # Chunks held until the round is known to be kept (``hold_text``): (bytes, the round's words)
        self._words: list[tuple[bytes, bool]] = []
        self._ended = False  # a candidate's finishReason, or the upstream's own error, came

    failure_event = "error"

    def _failed(self, failure: Any) -> list[bytes]:
        """One chunk that is Google's error object, as the API itself ends a stream it cannot
        finish: google-genai raises it (``APIError`` by its ``code``)."""
        kind = "invalid_request_error" if failure.final else "upstream_error"
        return [event(error_body(failure.message, kind, failure.code))]

    def _complete(self) -> bool:
        # Gemini has no end-of-stream event: its last chunk carries a finishReason.
        return self._ended

    def _on_event(self, sse: SSEEvent, out: list[bytes]) -> None:
        if not _data_lines(sse.raw):
            # google-genai reads a line that is not ``data: `` as raw JSON, a chunk of its own:
            # one this filter could not see (the API sends none)
            self._invalid(out, "a line that is no data line in its event stream")
            return
        try:
            chunk = codec.loads(sse.data) if sse.data else None
        except codec.DecodeError:
            chunk = None
        if not isinstance(chunk, dict):
            self._as_it_came(sse.raw, out)  # not a chunk this filter reads
            return
        if "error" in chunk:
            self._ended = True
        if isinstance(chunk.get("usageMetadata"), dict):
            self._usage = chunk["usageMetadata"]
        candidates = chunk.get("candidates")
        first = (
            candidates[0] if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict) else None
        )
        if first is None:
            self._as_it_came(sse.raw, out)
            return
        parts = parts_of(first.get("content"))
        kept_parts = self._judged(parts)
        closing = first.get("finishReason") is not None
        self._ended = self._ended or closing
        state = self.round
        if closing and state.all_dropped:
            state.finish_withheld = True
            self._withheld = _with_parts(chunk, first, kept_parts)
            self._drop_words(out)
            return
        if len(kept_parts) == len(parts):
            piece: bytes | None = sse.raw
        elif kept_parts or closing or (isinstance(candidates, list) and len(candidates) > 1):
            piece = event(_with_parts(chunk, first, kept_parts))
        else:
            piece = None
        if self.options.hold_text:
            if state.all_dropped:  # the round is refused: none of its words are shown
                self._drop_words(out)
                return
            if not state.kept and not closing:  # its fate is not known yet
                if piece is not None:
                    self._words.append((piece, True))
                return
            self._release(out)
        if piece is not None:
            out.append(piece)

    def _as_it_came(self, raw: bytes, out: list[bytes]) -> None:
        """A chunk without a candidate: in order behind held words, never dropped with them."""
        if self._words:
            self._words.append((raw, False))
        else:
            out.append(raw)

    def _release(self, out: list[bytes]) -> None:
        out += [raw for raw, _ in self._words]
        self._words.clear()

    def _drop_words(self, out: list[bytes]) -> None:
        out += [raw for raw, words in self._words if not words]
        self._words.clear()

    def _judged(self, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The parts that go out: a call refused here, and every call after one, is cut."""
        if not any(isinstance(p.get("functionCall"), dict) for p in parts):
            return parts
        state, kept = self.round, []
        for part in parts:
            calls = list(calls_of([part], f"s{len(self.rounds)}.{self._calls}"))
            if not calls:
                kept.append(part)
                continue
            before = len(state.kept)
            state.settle((_Proposed(self._calls, calls[0]),), self._judge, 0)
            self._calls += 1
            if len(state.kept) > before:
                kept.append(part)
        return kept

    def _close_held(self, out: list[bytes]) -> None:
        """The stream ended without a closing chunk: the round's words (``hold_text``) are kept."""
        self._release(out)

    def _cut(self, upstream: bytes) -> list[bytes]:
        out: list[bytes] = []
        self._release(out)  # broken off: the words so far go out
        return out

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        self._words.clear()  # dropped with the stream, as whatever else is unread
        closing = termination(text, model or self._model)
        if self._usage is not None:
            closing["usageMetadata"] = self._usage
        return [event(closing)]

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        if undecided and self._withheld is not None:
            out.append(event(self._withheld))


def _data_lines(raw: bytes) -> bool:
    """Every line of the event is a ``data: `` line (the one-line event the API sends, at once)."""
    if raw.startswith(b"data: ") and raw.find(b"\n") == len(raw) - 2 and b"\r" not in raw:
        return True
    return all(not line or line.startswith(b"data: ") for line in raw.replace(b"\r", b"\n").split(b"\n"))


def _with_parts(chunk: dict[str, Any], first: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    content = content_value if isinstance(content_value := first.get("content"), dict) else {"role": "model"}
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
