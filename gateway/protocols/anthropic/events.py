"""Anthropic stream events the gateway writes: ``event: <type>`` then one ``data:`` line.

The anthropic SDK dispatches on the event name and reads the same ``type`` in the data, so both
are always written and always agree.
"""

from __future__ import annotations

import secrets
from typing import Any

from gateway.protocols.sse import SSEDecoder
from gateway.wire import codec

PING = b'event: ping\ndata: {"type":"ping"}\n\n'


def event(data: dict[str, Any]) -> bytes:
    return b"event: " + str(data["type"]).encode() + b"\ndata: " + codec.dumps(data) + b"\n\n"


def closing(stream: bytes) -> bytes:
    """What closes a Messages stream cut short after ``stream``: a ``content_block_stop`` for
    the block it started and never stopped (blocks come one at a time), else nothing. Only
    complete events count: a partial one was never relayed."""
    open_index = None
    for sse in SSEDecoder().feed(stream):
        try:
            data = codec.loads(sse.data) if sse.data is not None else None
        except codec.DecodeError:
            continue
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        if kind == "content_block_start":
            open_index = data.get("index")
        elif kind == "content_block_stop" and data.get("index") == open_index:
            open_index = None
    return b"" if open_index is None else event({"type": "content_block_stop", "index": open_index})


def new_message_id() -> str:
    return f"msg_loopguard_{secrets.token_hex(12)}"


def zero_usage() -> dict[str, Any]:
    return {"input_tokens": 0, "output_tokens": 0}


def message_start(message_id: str, model: str, usage: dict[str, Any]) -> bytes:
    return event(
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
    )


def text_block(index: int, text: str) -> list[bytes]:
    """A whole text block: start, one delta, stop."""
    return [
        event({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        event({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        event({"type": "content_block_stop", "index": index}),
    ]


def message_end(stop_reason: str, usage: dict[str, Any]) -> list[bytes]:
    """``message_delta`` (stop reason, cumulative usage) then ``message_stop``."""
    return [
        event({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage}),
        event({"type": "message_stop"}),
    ]


def overlay_usage(base: Any, delta: Any) -> Any:
    """``message_start`` usage updated by a ``message_delta``'s: its counts are cumulative
    totals, and a field it leaves out or sends as null keeps the earlier value."""
    if not isinstance(delta, dict):
        return base
    merged = dict(base) if isinstance(base, dict) else {}
    merged.update({k: v for k, v in delta.items() if v is not None})
    return merged
