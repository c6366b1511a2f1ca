"""Converse stream events as AWS event-stream frames: read from a complete stream, written for
the gateway's own events.

Each event is one frame whose ``:event-type`` names it (``messageStart``, ``contentBlockStart``,
``contentBlockDelta``, ``contentBlockStop``, ``messageStop``, ``metadata``) and whose payload is
its JSON object; an error is an ``exception`` frame named by its stream member
(``validationException``, ...). The frames are botocore's (``protocols/eventstream.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.protocols.eventstream import FrameDecoder, frame
from gateway.wire import codec

ZERO_USAGE = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}


def event(name: str, data: dict[str, Any]) -> bytes:
    return frame(name, codec.dumps(data))


def exception(name: str, message: str) -> bytes:
    """An ``exception`` frame (``name``: a member of the stream's union, ``validationException``)."""
    return frame(name, codec.dumps({"message": message}), "exception")


def read(stream: bytes) -> Iterator[tuple[str | None, Any]]:
    """Each readable frame of a complete stream as (event or exception name, payload JSON)."""
    decoder = FrameDecoder()
    for found in [*decoder.feed(stream), *decoder.flush()]:
        if found.data is None:
            return
        try:
            data = codec.loads(found.data)
        except codec.DecodeError:
            data = None
        yield found.event, data


def text_block(index: int, text: str) -> list[bytes]:
    """A whole text block at ``index``: its one delta, then its stop."""
    return [
        event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}}),
        event("contentBlockStop", {"contentBlockIndex": index}),
    ]


def message_end(stop_reason: str, usage: Any) -> list[bytes]:
    """``messageStop`` and the ``metadata`` after it (usage and metrics are required there)."""
    return [
        event("messageStop", {"stopReason": stop_reason}),
        event("metadata", {"usage": usage if isinstance(usage, dict) else ZERO_USAGE, "metrics": {"latencyMs": 0}}),
    ]


def message_start() -> bytes:
    return event("messageStart", {"role": "assistant"})


def whole_stream(text: str) -> list[bytes]:
    """A complete stream whose only content is ``text``: what the SDKs read as a final answer."""
    return [message_start(), *text_block(0, text), *message_end("end_turn", ZERO_USAGE)]
