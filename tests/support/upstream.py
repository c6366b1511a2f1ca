"""A scripted OpenAI-compatible upstream: tests queue what the "model" answers next.

It records every request it receives (raw body bytes, headers) so tests can assert exactly what
the gateway forwarded. Replies are built from small step objects so a looping model is a list.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

_ids = itertools.count(1)


@dataclass
class Reply:
    """One scripted answer. ``tool_calls`` are (name, arguments-str) pairs."""

    content: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    status: int = 200
    error: dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunk_delay: float = 0.0  # seconds between streamed chunks
    split_args: int = 7  # stream arguments in pieces of this many characters
    raw_stream: list[bytes] | None = None  # exact SSE bytes to send instead
    # Byte-level fidelity tests (all optional; the defaults keep the behaviour above):
    body: bytes | None = None  # exact non-streamed body bytes to send instead of a completion
    raw_headers: list[tuple[str, str]] = field(default_factory=list)  # extra headers, repeats kept
    delay: float = 0.0  # seconds before the response headers (a slow model, for timeouts)
    chunked: bool = False  # send a non-streamed body with chunked transfer coding

    def completion(self, model: str) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{next(_ids)}", "type": "function", "function": {"name": n, "arguments": a}}
                for n, a in self.tool_calls
            ]
        return {
            "id": f"chatcmpl-up{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if self.tool_calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def chunks(self, model: str) -> list[dict]:
        env = {
            "id": f"chatcmpl-up{next(_ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        out = [{**env, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
        if self.content:
            for i in range(0, len(self.content), 5):
                out.append(
                    {
                        **env,
                        "choices": [{"index": 0, "delta": {"content": self.content[i : i + 5]}, "finish_reason": None}],
                    }
                )
        for index, (name, args) in enumerate(self.tool_calls):
            first = {
                "index": index,
                "id": f"call_{next(_ids)}",
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            out.append({**env, "choices": [{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}]})
            for i in range(0, len(args), self.split_args):
                part = {"index": index, "function": {"arguments": args[i : i + self.split_args]}}
                out.append({**env, "choices": [{"index": 0, "delta": {"tool_calls": [part]}, "finish_reason": None}]})
        reason = "tool_calls" if self.tool_calls else "stop"
        out.append({**env, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
        return out


def _dumps(value: Any) -> bytes:
    """orjson, or the stdlib for what orjson refuses: a fuzzed request's ``model`` echoed back
    may be an integer beyond 64 bits or hold a lone surrogate, and the scripted model must still
    answer (a 500 from it would look like the gateway's)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


class ScriptedUpstream:
    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.default = Reply(content="ok")
        self.requests: list[dict[str, Any]] = []
        self.stream_finished = asyncio.Event  # type: ignore[assignment]
        self.finished_streams = 0
        self.cancelled_streams = 0
        # Replies for the non-chat /v1/* routes; when empty the built-in answers below apply.
        self.passthrough_script: deque[Reply] = deque()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/{rest:path}", self._other, methods=["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"]),
            ]
        )

    def queue(self, *replies: Reply) -> None:
        self.script.extend(replies)

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    def _record(self, request: Request, raw: bytes, body: Any) -> None:
        self.requests.append(
            {
                "raw": raw,
                "json": body,
                "headers": dict(request.headers),
                "raw_headers": list(request.headers.raw),  # repeats and order, for hop-by-hop tests
                "method": request.method,
                "path": request.url.path,
                "query": request.scope.get("query_string", b""),
            }
        )

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = json.loads(raw)  # what orjson refuses but JSON allows (lone surrogate escapes)
        self._record(request, raw, body)
        reply = self.script.popleft() if self.script else self.default
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            content = (
                reply.body
                if reply.body is not None
                else orjson.dumps(reply.error or {"error": {"message": "scripted", "type": "x"}})
            )
            return self._respond(reply, content)
        model = body.get("model", "test-model")
        if body.get("stream") and reply.body is None:
            response = StreamingResponse(self._sse(reply, model), media_type="text/event-stream", headers=reply.headers)
            response.raw_headers.extend(
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.raw_headers
            )
            return response
        return self._respond(reply, reply.body if reply.body is not None else _dumps(reply.completion(model)))

    @staticmethod
    def _respond(reply: Reply, content: bytes) -> Response:
        """A non-streamed answer with the reply's status, headers and framing."""
        if reply.chunked:

            async def pieces():
                half = len(content) // 2
                yield content[:half]
                yield content[half:]

            response: Response = StreamingResponse(
                pieces(), status_code=reply.status, headers=reply.headers, media_type="application/json"
            )
        else:
            response = Response(content, status_code=reply.status, headers=reply.headers, media_type="application/json")
        response.raw_headers.extend((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.raw_headers)
        return response

    async def _sse(self, reply: Reply, model: str):
        try:
            if reply.raw_stream is not None:
                for raw in reply.raw_stream:
                    yield raw
                    await asyncio.sleep(reply.chunk_delay)
            else:
                for chunk in reply.chunks(model):
                    yield b"data: " + _dumps(chunk) + b"\n\n"
                    await asyncio.sleep(reply.chunk_delay)
                yield b"data: [DONE]\n\n"
            self.finished_streams += 1
        except (asyncio.CancelledError, GeneratorExit):
            self.cancelled_streams += 1
            raise

    async def _other(self, request: Request) -> Response:
        raw = await request.body()
        self._record(request, raw, None)
        if self.passthrough_script:
            reply = self.passthrough_script.popleft()
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.raw_stream is not None:
                response = StreamingResponse(
                    self._sse(reply, ""),
                    status_code=reply.status,
                    media_type="text/event-stream",
                    headers=reply.headers,
                )
                response.raw_headers.extend(
                    (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.raw_headers
                )
                return response
            return self._respond(reply, reply.body if reply.body is not None else b"{}")
        if request.url.path == "/v1/models":
            return Response(
                orjson.dumps(
                    {"object": "list", "data": [{"id": "test-model", "object": "model", "created": 0, "owned_by": "t"}]}
                ),
                media_type="application/json",
                headers={"x-upstream": "yes"},
            )
        return Response(raw or b"{}", media_type="application/json", status_code=200)
