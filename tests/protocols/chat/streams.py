"""Building upstream streams, and reading the filter's output the way the openai SDK does."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from openai._streaming import SSEDecoder as SDKDecoder
from openai.lib.streaming.chat._completions import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.parsed_chat_completion import ParsedChatCompletion
from support.deltas import tc

from gateway.protocols.chat.stream import ToolCallFilter
from gateway.trace.model import ToolCall

from ..filters import chat_filter

ENV = {
    "id": "chatcmpl-up1",
    "object": "chat.completion.chunk",
    "created": 1700000000,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_abc",
}
ENV2 = {**ENV, "id": "chatcmpl-up2", "created": 1700000099}


def chunk(delta: dict | None = None, finish: str | None = None, *, env: dict = ENV, **extra: Any) -> dict:
    choice = {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
    return {**env, "choices": [choice], **extra}


def tools(*entries: dict, **delta: Any) -> dict:
    return chunk({**delta, "tool_calls": list(entries)})


def sse(*chunks: dict | str, done: bool = True, eol: str = "\n") -> bytes:
    """Upstream bytes. ``json.dumps`` spacing differs from orjson's, so a re-encoded event shows."""
    out = b""
    for item in chunks:
        body = item.encode() if isinstance(item, str) else json.dumps(item, ensure_ascii=False).encode()
        out += b"data: " + body + (eol * 2).encode()
    if done:
        out += b"data: [DONE]" + (eol * 2).encode()
    return out


def keep_all(call: ToolCall, position: int) -> bool:
    return True


def run(
    stream: bytes | Iterable[bytes],
    judge: Callable[[ToolCall, int], bool] = keep_all,
) -> tuple[bytes, ToolCallFilter]:
    """Relay one upstream stream to its end, as the pipeline does when no decision is needed."""
    filt = chat_filter(judge)
    pieces = [stream] if isinstance(stream, bytes) else stream
    out = [b for piece in pieces for b in filt.feed(piece)]
    out += filt.end_upstream()
    out += filt.final()
    return b"".join(out), filt


def client_events(data: bytes) -> list[str]:
    """The data of every event, decoded by the SDK's own SSE decoder."""
    return [event.data for event in SDKDecoder().iter_bytes(iter([data]))]


def client_chunks(data: bytes) -> list[dict]:
    """Chunks the SDK would see: everything before [DONE], which must come exactly once, last."""
    events = client_events(data)
    assert events.count("[DONE]") <= 1
    if "[DONE]" in events:
        assert events[-1] == "[DONE]"
        events = events[:-1]
    return [orjson.loads(e) for e in events]


def accumulate(data: bytes) -> ParsedChatCompletion:
    """The final completion as the openai SDK's stream accumulator builds it."""
    state: ChatCompletionStreamState = ChatCompletionStreamState()
    for body in client_chunks(data):
        assert "error" not in body
        if body.get("object") != "chat.completion.chunk":
            continue  # as the SDK's ChatCompletionStream does (Azure content-filter chunks)
        state.handle_chunk(ChatCompletionChunk.model_validate(body))
    return state.get_final_completion()


def calls_of(completion: ParsedChatCompletion) -> list[tuple[str, str, str]]:
    message = completion.choices[0].message
    return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]


def tool_entries(data: bytes) -> list[dict]:
    """Every tool-call delta entry the client receives, in order."""
    return [
        entry
        for body in client_chunks(data)
        for choice in body["choices"]
        for entry in (choice.get("delta") or {}).get("tool_calls") or []
    ]
