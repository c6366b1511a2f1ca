"""Anthropic event streams as the API sends them, and reading them back the way the SDK does."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from anthropic._streaming import SSEDecoder as SDKDecoder
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from gateway.protocols.anthropic.stream import ToolUseFilter
from gateway.trace.model import ToolCall

from ..filters import anthropic_filter

EVENTS = TypeAdapter(RawMessageStreamEvent)
MODEL = "claude-sonnet-4-6"


def ev(data: dict[str, Any]) -> bytes:
    """One upstream event. ``json.dumps`` spacing differs from orjson's: a re-encoded event shows."""
    return f"event: {data['type']}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def start(msg_id: str = "msg_01Up", input_tokens: int = 412, cache_read: int = 0) -> bytes:
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cache_read,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    return ev(
        {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
    )


PING = ev({"type": "ping"})


def text(index: int, *pieces: str) -> list[bytes]:
    return [
        ev({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        *(
            ev({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}})
            for p in pieces
        ),
        ev({"type": "content_block_stop", "index": index}),
    ]


def tool(index: int, ident: str, name: str, *parts: str) -> list[bytes]:
    return [
        ev(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": ident, "name": name, "input": {}},
            }
        ),
        *(
            ev(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                }
            )
            for p in parts
        ),
        ev({"type": "content_block_stop", "index": index}),
    ]


def thinking(index: int, thought: str) -> list[bytes]:
    return [
        ev(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        ),
        ev({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": thought}}),
        ev(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": "EqQBCgIYAh"},
            }
        ),
        ev({"type": "content_block_stop", "index": index}),
    ]


def end(stop_reason: str = "tool_use", output_tokens: int = 87) -> list[bytes]:
    return [
        ev(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            }
        ),
        ev({"type": "message_stop"}),
    ]


def stream(*parts: bytes | list[bytes]) -> bytes:
    out = b""
    for part in parts:
        out += part if isinstance(part, bytes) else b"".join(part)
    return out


def keep_all(call: ToolCall, position: int) -> bool:
    return True


def refuse(*names: str) -> Callable[[ToolCall, int], bool]:
    return lambda call, position: call.name not in names


def run(upstream: bytes | Iterable[bytes], judge=keep_all) -> tuple[bytes, ToolUseFilter]:
    """Relay one upstream stream to its end, as the pipeline does when nothing is decided."""
    filt = anthropic_filter(judge, keepalive_s=None)
    out = b""
    for piece in [upstream] if isinstance(upstream, bytes) else upstream:
        out += b"".join(filt.feed(piece))
    out += b"".join(filt.end_upstream())
    return out, filt


def sdk_events(data: bytes) -> list[Any]:
    """Events as the SDK's stream yields them (pings and unnamed events skipped), each validated
    against the SDK's event types."""
    found = []
    for sse in SDKDecoder().iter_bytes(iter([data])):
        if sse.event in (None, "ping"):
            continue
        assert sse.event == sse.json()["type"], "event name and data type must agree"
        found.append(EVENTS.validate_python(sse.json()))
    return found


def accumulate(data: bytes) -> Message:
    """The message the SDK's ``messages.stream(...).get_final_message()`` would build."""
    snapshot = None
    bufs: dict[int, bytes] = {}
    for event in sdk_events(data):
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
    assert snapshot is not None, "no message_start"
    return Message.model_validate(snapshot.model_dump())


def calls_of(message: Message) -> list[tuple[str, str, dict]]:
    return [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
