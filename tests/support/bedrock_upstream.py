"""A scripted Amazon Bedrock runtime: InvokeModel with Anthropic bodies, checked as AWS checks them.

``POST /model/{modelId}/invoke`` answers the Anthropic ``message``;
``/invoke-with-response-stream`` streams each Anthropic event in a ``chunk`` frame
(``{"bytes": base64, "p": padding}``) as Bedrock does. Before answering it verifies the request
as AWS would: the SigV4 signature over the raw path, query, signed headers and body against the
scripted credentials (``sigv4_check``), or a Bedrock API key it knows; a body with an
``anthropic_version`` and neither ``model`` nor ``stream``; a model id it serves. Refusals are Bedrock's: ``{"message": ...}`` with
``x-amzn-ErrorType``. Every request is recorded with its exact bytes and raw path.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from gateway.protocols.eventstream import CONTENT_TYPE, frame
from support import sigv4_check
from support.anthropic_upstream import Said

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
PROFILE_ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
MODELS = frozenset({MODEL, PROFILE_ARN})
API_KEY = "ABSKscriptedbedrockkey"


def chunk_frames(events: list[bytes]) -> list[bytes]:
    """Anthropic SSE events as Bedrock's chunk frames, each with a padding field."""
    out = []
    for event in events:
        data = event.partition(b"\ndata: ")[2].rstrip(b"\n")
        payload = {"bytes": base64.b64encode(data).decode(), "p": "abcdefghij"[: len(data) % 10]}
        out.append(frame("chunk", json.dumps(payload).encode()))
    return out


def refusal(status: int, kind: str, message: str) -> Response:
    return Response(
        orjson.dumps({"message": message}),
        status,
        media_type="application/json",
        headers={"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"},
    )


class BedrockUpstream:
    def __init__(self, responder: Callable[[dict], Said], api_key: str | None = API_KEY) -> None:
        self.responder = responder
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.refused: list[tuple[str, str]] = []  # (error type, raw path) of each refusal
        self.sent: list[bytes] = []  # the exact bytes of each answer
        self.app = Starlette(
            routes=[
                Route("/model/{model:path}/invoke", self._invoke, methods=["POST"]),
                Route("/model/{model:path}/invoke-with-response-stream", self._stream, methods=["POST"]),
                Route("/model/{model:path}/count-tokens", self._count, methods=["POST"]),
            ]
        )

    async def _checked(self, request: Request, invoke: bool = True) -> tuple[dict[str, Any], str] | Response:
        raw = await request.body()
        raw_path = request.scope["raw_path"].decode("latin-1")
        self.requests.append({"raw": raw, "headers": dict(request.headers), "raw_path": raw_path})
        denied = self._denied(request, raw, raw_path)
        if denied is not None:
            self.refused.append((denied[0], raw_path))
            return refusal(403, *denied)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return refusal(
                400, "ValidationException", "Malformed input request, please reformat your input and try again."
            )
        self.requests[-1]["json"] = body
        model = request.path_params["model"]
        if not invoke:
            return body, model
        if model not in MODELS:
            return refusal(400, "ValidationException", "The provided model identifier is invalid.")
        if not isinstance(body.get("anthropic_version"), str) or "model" in body or "stream" in body:
            return refusal(400, "ValidationException", "Malformed input request: extraneous key or bad version.")
        return body, model

    def _denied(self, request: Request, raw: bytes, raw_path: str) -> tuple[str, str] | None:
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            ok = self.api_key is not None and auth[7:] == self.api_key
            return (
                None
                if ok
                else ("UnrecognizedClientException", "Invalid API Key format: Must start with pre-defined prefix")
            )
        host = request.headers["host"]
        query = request.scope["query_string"].decode("latin-1")
        return sigv4_check.refusal(request.method, raw_path, query, request.headers.items(), raw, host)

    async def _invoke(self, request: Request) -> Response:
        checked = await self._checked(request)
        if isinstance(checked, Response):
            return checked
        body, model = checked
        said = self.responder(body)
        if said.status != 200:
            return refusal(said.status, said.error_type, "scripted")
        content = json.dumps(said.message(model, said.blocks())).encode()
        self.sent.append(content)
        return Response(content, media_type="application/json", headers={"x-amzn-requestid": "req-up"})

    async def _stream(self, request: Request) -> Response:
        checked = await self._checked(request)
        if isinstance(checked, Response):
            return checked
        body, model = checked
        said = self.responder(body)
        if said.status != 200:
            return refusal(said.status, said.error_type, "scripted")
        frames = chunk_frames(said.events(model))
        if said.cut_after is not None:
            frames = frames[: said.cut_after] + [frames[said.cut_after][:20]]
        if said.raw_stream is not None:
            frames = [*frames[:2], said.raw_stream]
        self.sent.append(b"".join(frames))

        async def pieces():
            for piece in frames:
                yield piece
                if said.chunk_delay:
                    await asyncio.sleep(said.chunk_delay)

        return StreamingResponse(pieces(), media_type=CONTENT_TYPE)

    async def _count(self, request: Request) -> Response:
        checked = await self._checked(request, invoke=False)
        if isinstance(checked, Response):
            return checked
        return Response(orjson.dumps({"inputTokens": 42}), media_type="application/json")
