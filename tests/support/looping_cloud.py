"""One scripted cloud for every guarded protocol at once, answering each model call with the same
looping tool call, under an id no request ever carries (``MARK``), and logging the exact request
target of every request it gets.

It serves every provider, each under its own prefix (``/_azure``, ``/_bedrock``, ...: the
gateway's base URL for it), and routes as a lenient frontend of that provider would
(``route_of``: decoded, even twice; case folded; empty segments and ``;parameters`` dropped):
whatever then is one of the provider's model calls (``CALLS``: chat completions, Responses,
Messages, ``:generateContent``, ``:rawPredict``, InvokeModel, Converse, on its own paths) is
answered in that protocol's format, streamed or not as the path or the body asks. So a request the gateway relays unjudged by
any spelling is answered with the looping call, and ``delivered`` finds the mark in what the
client got. Everything else is a 404.

``fault`` (a ``support.cloud_faults`` name, or None) breaks each answer the way a broken upstream
would: cut, mislabelled, damaged frames, fields of the wrong type, ...
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_to_bytes

from botocore.eventstream import EventStreamBuffer
from starlette.responses import Response, StreamingResponse

from gateway.protocols.eventstream import CONTENT_TYPE, frame
from support import responses_wire

MARK = "UNJUDGED"
ARGS = '{"path": "a.txt"}'
SSE = "text/event-stream"
JSON = "application/json"
_ids = itertools.count(1)
STALL_S = 3.0  # a silence longer than the fuzzing gateway's stream idle timeout


@dataclass
class Answer:
    """What one model call is answered with: its format, whether it streams, the bytes (pieces
    as sent), the content type and status."""

    family: str
    stream: bool
    pieces: list[bytes]
    content_type: str  # "": no content type at all
    status: int = 200
    stall_at: int | None = None  # before this piece, the cloud goes silent (``STALL_S``)
    reset_at: int | None = None  # before this piece, the cloud drops the connection


@dataclass
class Seen:
    target: bytes  # the exact request target (path and query, as sent)
    routed: str  # the path as this cloud read it
    family: str | None  # the protocol it answered as (None: 404)
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names


# The model calls each provider routes (the cloud serves them all, each under its own prefix:
# the gateway's base URL for it), by protocol family, on the path as it reads it (below).
_GEMINI = r"/(v1beta|v1|v1alpha)/(models|tunedmodels|dynamic)/[^/]+:(stream)?generatecontent"
_VERTEX = r"/(v1|v1beta1)(/projects/[^/]+/locations/[^/]+)?"
CALLS: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    provider: tuple((family, re.compile(pattern + r"\Z")) for family, pattern in routes)
    for provider, routes in {
        "openai": (("chat", r"/v1/chat/completions"), ("responses", r"/v1/responses")),
        "anthropic": (("anthropic", r"/v1/messages"),),
        "gemini": (("gemini", _GEMINI), ("chat", r"/v1beta/openai/chat/completions")),
        "azure": (
            ("chat", r"/openai/(v1/)?(deployments/[^/]+/)?chat/completions"),
            ("responses", r"/openai/(v1/)?(deployments/[^/]+/)?responses"),
        ),
        "bedrock": (
            ("bedrock", r"/model/.+/invoke(-with-response-stream)?"),
            ("converse", r"/model/.+/converse(-stream)?"),
            ("chat", r"/(openai/)?v1/chat/completions"),
            ("responses", r"/openai/v1/responses"),
        ),
        "vertex": (
            (
                "gemini",
                _VERTEX + r"/(publishers/[^/]+/models|endpoints|models|tunedmodels)/[^/]+:(stream)?generatecontent",
            ),
            ("anthropic", _VERTEX + r"/publishers/anthropic/models/[^/]+:(stream)?rawpredict"),
            ("chat", _VERTEX + r"/endpoints/[^/]+/chat/completions"),
        ),
    }.items()
}


def route_of(target: bytes) -> tuple[str, str | None, bytes]:
    """(the path as read, the protocol family it is a model call of or None, the query). Read
    as a lenient frontend of the provider its first segment names reads it: split at the first
    raw ``?``, percent-decoded (twice: one that decodes once more sees no other path), and for
    matching: case folded, empty segments, ``;parameters`` and trailing dots or blanks of a
    segment dropped, a ``:verb`` joined to its resource across a slash."""
    raw_path, _, query = target.partition(b"?")
    provider, _, raw_path = raw_path.removeprefix(b"/_").partition(b"/")
    path = "/" + unquote_to_bytes(unquote_to_bytes(raw_path)).decode("utf-8", "replace")
    segments = [s.split(";", 1)[0].strip().rstrip(". ").lower() for s in path.split("/")]
    key = re.sub(r"/[.\s]*:", ":", "/" + "/".join(s for s in segments if s))
    routes = CALLS.get(provider.decode("latin-1"), ())
    family = next((family for family, pattern in routes if pattern.match(key)), None)
    return path, family, query


def streams(family: str, path: str, query: bytes, body: Any) -> bool:
    key = path.lower()
    if family == "gemini":
        return key.endswith(":streamgeneratecontent")
    if family == "bedrock":
        return key.endswith("-stream")
    if family == "converse":
        return key.endswith("-stream")
    if family == "anthropic" and ":" in key.rpartition("/")[2]:
        return key.endswith(":streamrawpredict")
    return isinstance(body, dict) and body.get("stream") is True


def _sse(data: Any, event: str | None = None) -> bytes:
    line = b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"
    return (f"event: {event}\n".encode() + line) if event else line


# --- each protocol's looping answer ----------------------------------------------------------------


def chat(mark: str, stream: bool) -> list[bytes]:
    call = {"id": mark, "type": "function", "function": {"name": "read_file", "arguments": ARGS}}
    head = {"id": "chatcmpl-1", "created": 1, "model": "m"}
    if not stream:
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        return [json.dumps({**head, "object": "chat.completion", "choices": [choice], "usage": usage}).encode()]
    chunk = {**head, "object": "chat.completion.chunk"}
    first = {"index": 0, "id": mark, "type": "function", "function": {"name": "read_file", "arguments": ""}}
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": None},
        {"tool_calls": [first]},
        *({"tool_calls": [{"index": 0, "function": {"arguments": part}}]} for part in (ARGS[:8], ARGS[8:])),
    ]
    out = [_sse({**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas]
    out.append(_sse({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    return [*out, b"data: [DONE]\n\n"]


def responses(mark: str, stream: bool) -> list[bytes]:
    output = [responses_wire.function_call("read_file", ARGS, mark)]
    if not stream:
        return [json.dumps(responses_wire.response(output, f"resp_{next(_ids)}")).encode()]
    return [responses_wire.encode(e) for e in responses_wire.stream_events(output, f"resp_{next(_ids)}")]


def _anthropic_message(mark: str) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "tool_use", "id": mark, "name": "read_file", "input": {"path": "a.txt"}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def anthropic_events(mark: str) -> list[dict[str, Any]]:
    message = {**_anthropic_message(mark), "content": [], "stop_reason": None}
    block = {"type": "tool_use", "id": mark, "name": "read_file", "input": {}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": part}}
            for part in (ARGS[:8], ARGS[8:])
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]


def anthropic(mark: str, stream: bool) -> list[bytes]:
    if not stream:
        return [json.dumps(_anthropic_message(mark)).encode()]
    return [_sse(e, e["type"]) for e in anthropic_events(mark)]


def bedrock(mark: str, stream: bool) -> list[bytes]:
    if not stream:
        return [json.dumps(_anthropic_message(mark)).encode()]
    return [chunk(json.dumps(e).encode()) for e in anthropic_events(mark)]


def chunk(event: bytes) -> bytes:
    return frame("chunk", json.dumps({"bytes": base64.b64encode(event).decode()}).encode())


def _gemini_chunk(mark: str) -> dict[str, Any]:
    call = {"id": mark, "name": "read_file", "args": {"path": "a.txt"}}
    content = {"role": "model", "parts": [{"functionCall": call}]}
    usage = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
    return {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}], "usageMetadata": usage}


def gemini(mark: str, stream: bool, sse: bool = True) -> list[bytes]:
    if stream and sse:
        return [_sse(_gemini_chunk(mark))]
    if stream:
        return [json.dumps([_gemini_chunk(mark)]).encode()]
    return [json.dumps(_gemini_chunk(mark)).encode()]


def converse_events(mark: str) -> list[tuple[str, dict[str, Any]]]:
    start = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": mark, "name": "read_file"}}}
    usage = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
    return [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockStart", start),
        *(
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": p}}})
            for p in (ARGS[:8], ARGS[8:])
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "tool_use"}),
        ("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}),
    ]


def converse(mark: str, stream: bool) -> list[bytes]:
    if stream:
        return [frame(name, json.dumps(data).encode()) for name, data in converse_events(mark)]
    use = {"toolUseId": mark, "name": "read_file", "input": {"path": "a.txt"}}
    reply = {
        "output": {"message": {"role": "assistant", "content": [{"toolUse": use}]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }
    return [json.dumps(reply).encode()]


WRITERS: dict[str, Callable[[str, bool], list[bytes]]] = {
    "chat": chat,
    "responses": responses,
    "anthropic": anthropic,
    "bedrock": bedrock,
    "gemini": gemini,
    "converse": converse,
}


def answer_for(family: str, stream: bool, query: bytes = b"alt=sse") -> Answer:
    """The looping answer of ``family``, under a fresh mark."""
    mark = f"{MARK}_{next(_ids)}"
    if family == "gemini" and stream and b"alt=sse" not in query:
        return Answer(family, stream, gemini(mark, True, sse=False), JSON)
    pieces = WRITERS[family](mark, stream)
    if not stream:
        return Answer(family, stream, pieces, JSON)
    kind = CONTENT_TYPE if family in ("bedrock", "converse") else SSE
    return Answer(family, stream, pieces, kind)


# --- what the client got ----------------------------------------------------------------------------


def delivered(body: bytes) -> bool:
    """The looping call's mark is in what a client read: in its bytes, or inside the base64 of an
    event-stream chunk (Bedrock's InvokeModel streams)."""
    if MARK.encode() in body:
        return True
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    try:
        for message in buffer:
            payload = json.loads(bytes(message.payload))
            inner = payload.get("bytes") if isinstance(payload, dict) else None
            if isinstance(inner, str) and MARK.encode() in base64.b64decode(inner + "==="):
                return True
    except Exception:  # what follows is no frame: the mark was looked for in the bytes above
        return False
    return False


# --- the cloud ------------------------------------------------------------------------------------


@dataclass
class LoopingCloud:
    """An ASGI app; ``fault``: a function from the answer to the pieces a broken upstream sends
    (and their content type and status), or None."""

    fault: Callable[[Answer], Answer] | None = None
    seen: list[Seen] = field(default_factory=list)

    @property
    def model_calls(self) -> list[Seen]:
        return [s for s in self.seen if s.family is not None]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # served with lifespan off
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        target = scope["raw_path"] + (b"?" + scope["query_string"] if scope["query_string"] else b"")
        path, family, query = route_of(target)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        self.seen.append(Seen(target, path, family, body, headers))
        if family is None or scope["method"] != "POST":
            await Response(b'{"error": {"code": 404, "message": "not a model call"}}', 404, media_type=JSON)(
                scope, receive, send
            )
            return
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        answer = answer_for(family, streams(family, path, query, parsed), query)
        if self.fault is not None:
            answer = self.fault(answer)
        kind = answer.content_type or None
        if answer.stream or answer.stall_at is not None or answer.reset_at is not None:

            async def pieces() -> Any:
                for at, piece in enumerate(answer.pieces):
                    if at == answer.stall_at:
                        await asyncio.sleep(STALL_S)
                    if at == answer.reset_at:
                        raise ConnectionResetError("the scripted cloud drops the connection")
                    yield piece

            response: Response = StreamingResponse(pieces(), answer.status, media_type=kind)
        else:
            response = Response(b"".join(answer.pieces), answer.status, media_type=kind)
        await response(scope, receive, send)
