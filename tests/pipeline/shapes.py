"""An upstream that answers every protocol in the shape a test picks, whatever the request
asked for (``stream``): one JSON body, or an event stream. Each answer proposes the same
``read_file`` call, as a looping model does; every request is recorded."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support import anthropic_upstream as anthropic
from support import responses_wire as responses
from support.loop_bodies import ARGS, chat_request, claude_request, responses_request
from support.upstream import Reply

_ids = itertools.count(1)
JSON, SSE = "application/json", "text/event-stream"
MISLABELLED = "json-labelled-as-events"  # one JSON body sent as text/event-stream
UNLABELLED = ("events-as-text", "events-untyped")  # events sent as text/plain, or with no content type


def _chat(sse: bool) -> bytes:
    reply = Reply(tool_calls=[("read_file", ARGS)])
    if not sse:
        return orjson.dumps(reply.completion("m"))
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in reply.chunks("m")) + b"data: [DONE]\n\n"


def _responses(sse: bool) -> bytes:
    n = next(_ids)
    output = [responses.function_call("read_file", ARGS, f"call_up{n}")]
    if not sse:
        return orjson.dumps(responses.response(output, f"resp_up{n}"))
    return responses.sse(responses.stream_events(output, f"resp_up{n}"))


def _messages(sse: bool) -> bytes:
    said = anthropic.Said(calls=[("read_file", {"path": "a.txt"})])
    return b"".join(said.events("claude-test")) if sse else orjson.dumps(said.message("claude-test", said.blocks()))


@dataclass(frozen=True)
class Protocol:
    name: str
    path: str  # the guarded route, on the gateway and the upstream alike
    request: Callable[[int], dict[str, Any]]  # a looping agent's body, ``n`` identical calls run
    answer: Callable[[bool], bytes]  # (as events?) the looping call, in that shape


PROTOCOLS = (
    Protocol("chat", "/v1/chat/completions", chat_request, _chat),
    Protocol("responses", "/v1/responses", responses_request, _responses),
    Protocol("anthropic", "/v1/messages", claude_request, _messages),
)


class ShapedUpstream:
    """``shape(request number) -> JSON | SSE | MISLABELLED``: how the n-th request (0 first)
    is answered."""

    def __init__(self, shape: Callable[[int], str]) -> None:
        self.shape = shape
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route(p.path, self._answer, methods=["POST"]) for p in PROTOCOLS])

    async def _answer(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append({"path": request.url.path, "json": body})
        kind = self.shape(len(self.requests) - 1)
        protocol = next(p for p in PROTOCOLS if p.path == request.url.path)
        if kind in UNLABELLED:
            answer = Response(protocol.answer(True), media_type="text/plain" if kind == UNLABELLED[0] else None)
            if kind == UNLABELLED[1]:
                del answer.headers["content-type"]
            return answer
        return Response(protocol.answer(kind == SSE), media_type=SSE if kind == MISLABELLED else kind)


def calls_in(content: bytes) -> int:
    """The tool calls a client finds in a reply, whatever its shape and protocol."""
    try:
        found: Any = [orjson.loads(content)]
    except orjson.JSONDecodeError:
        found = [
            orjson.loads(line[5:])
            for line in content.splitlines()
            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"
        ]
    return _count(found)


def _count(value: Any) -> int:
    if isinstance(value, list):
        return sum(_count(v) for v in value)
    if not isinstance(value, dict):
        return 0
    own = value.get("type") in ("function_call", "tool_use") or bool(value.get("tool_calls"))
    return int(own) + sum(_count(v) for v in value.values())
