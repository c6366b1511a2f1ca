"""A scripted Anthropic Messages upstream: the "model" answers each request from a responder.

It speaks ``POST /v1/messages`` (a ``message``, or its event stream when ``stream`` is true, with
``event:`` names, pings and tool input split into ``input_json_delta`` pieces as the API sends
them) and ``POST /v1/messages/count_tokens``, and records every request it receives.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

_ids = itertools.count(1)


@dataclass
class Said:
    """One scripted answer: text, then tool_use blocks given as (name, input) pairs."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    error_type: str = "overloaded_error"
    split: int = 6  # stream tool input in pieces of this many characters
    chunk_delay: float = 0.0  # seconds between streamed events (a slow model, for timeouts)
    cut_after: int | None = None  # stream only this many events, then half of the next (a cut)
    raw_stream: bytes | None = None  # these bytes instead of the events (a 200 that is not SSE)

    def blocks(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"type": "text", "text": self.text}] if self.text else []
        out += [{"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": n, "input": i} for n, i in self.calls]
        return out

    def message(self, model: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"msg_up{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": "tool_use" if self.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }

    def events(self, model: str) -> list[bytes]:
        blocks = self.blocks()
        opening = {**self.message(model, []), "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
        out = [_event({"type": "message_start", "message": opening}), _event({"type": "ping"})]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                out.append(
                    _event(
                        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
                    )
                )
                for i in range(0, len(block["text"]), 8):
                    out.append(_delta(index, {"type": "text_delta", "text": block["text"][i : i + 8]}))
            else:
                out.append(
                    _event({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
                )
                text = json.dumps(block["input"])
                for i in range(0, len(text), self.split):
                    out.append(_delta(index, {"type": "input_json_delta", "partial_json": text[i : i + self.split]}))
            out.append(_event({"type": "content_block_stop", "index": index}))
        reason = "tool_use" if self.calls else "end_turn"
        out.append(
            _event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": None},
                    "usage": {"output_tokens": 20},
                }
            )
        )
        out.append(_event({"type": "message_stop"}))
        return out


def _event(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return _event({"type": "content_block_delta", "index": index, "delta": delta})


class AnthropicUpstream:
    def __init__(self, responder: Callable[[dict], Said]) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.sent: list[bytes] = []  # the exact bytes of each answer, for byte-for-byte checks
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count, methods=["POST"]),
            ]
        )

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    async def _record(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        body = orjson.loads(raw)
        self.requests.append({"raw": raw, "json": body, "headers": dict(request.headers), "path": request.url.path})
        return body

    async def _messages(self, request: Request) -> Response:
        body = await self._record(request)
        said = self.responder(body)
        model = body.get("model", "claude-test")
        if said.status != 200:
            error = {"type": "error", "error": {"type": said.error_type, "message": "scripted"}}
            return Response(orjson.dumps(error), said.status, media_type="application/json")
        if body.get("stream"):
            events = said.events(model)
            if said.cut_after is not None:
                events = events[: said.cut_after] + [events[said.cut_after][:20]]
            if said.raw_stream is not None:
                events = [said.raw_stream]
            self.sent.append(b"".join(events))

            async def pieces():
                for event in events:
                    yield event
                    if said.chunk_delay:
                        await asyncio.sleep(said.chunk_delay)

            return StreamingResponse(pieces(), media_type="text/event-stream")
        content = json.dumps(said.message(model, said.blocks())).encode()
        self.sent.append(content)
        return Response(content, media_type="application/json", headers={"request-id": "req_up"})

    async def _count(self, request: Request) -> Response:
        body = await self._record(request)
        return Response(
            orjson.dumps({"input_tokens": 7 * len(body.get("messages", []))}), media_type="application/json"
        )


def stubborn(tool: str = "read_file", args: dict | None = None) -> Callable[[dict], Said]:
    """Calls the same tool with the same input forever, whatever it is told."""
    return lambda body: Said(calls=[(tool, args or {"path": "a.txt"})])


def healthy(files: int = 3) -> Callable[[dict], Said]:
    """Reads a different file each step, then answers."""

    def respond(body: dict) -> Said:
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if step < files:
            return Said(text=f"Reading file {step}.", calls=[("read_file", {"path": f"src/f{step}.py"})])
        return Said(text="All files read: nothing to fix.")

    return respond
