"""POST /v1/chat/completions: parse, let the loop guard judge, forward, relay."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.server.body import BodyTooLarge, read_body
from gateway.server.context import Gateway, upstream_path
from gateway.server.passthrough import too_large, upstream_failed
from gateway.server.responses import RelayStream, openai_error, relay
from gateway.upstream.base import UpstreamRequest, UpstreamResponse
from gateway.upstream.errors import UpstreamError

ACTION_HEADER = b"x-loopguard-action"


async def chat_completions(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    started = time.perf_counter()
    try:
        body = await read_body(request, gateway.config.limits.max_body_bytes)
    except BodyTooLarge:
        return too_large(gateway)
    payload, problem = parse_payload(body)
    if problem is not None:
        return problem
    stream = payload.get("stream") is True
    outgoing = UpstreamRequest(
        method="POST",
        path=upstream_path(request.url.path),
        query=request.scope.get("query_string", b""),
        headers=gateway.forward_headers(request.headers.raw, identity=True),
        body=body,
    )
    overhead = time.perf_counter() - started
    try:
        upstream = await gateway.upstream.send(outgoing)
    except UpstreamError as exc:
        return upstream_failed(gateway, exc, request.url.path)
    waited = time.perf_counter() - started - overhead
    log = gateway.log.bind(method="POST", path=request.url.path, status=upstream.status, stream=stream)
    headers = [*upstream.headers, (ACTION_HEADER, b"pass")]
    if stream and upstream.status == 200:
        log.info("request", upstream_ms=_ms(waited), overhead_ms=_ms(overhead), action="pass")
        return RelayStream(upstream.status, headers, _relay(upstream, log), upstream.aclose)
    try:
        content = await upstream.aread()
    except UpstreamError as exc:
        return upstream_failed(gateway, exc, request.url.path)
    finally:
        await upstream.aclose()
    log.info("request", upstream_ms=_ms(time.perf_counter() - started - overhead), overhead_ms=_ms(overhead), action="pass")
    return relay(upstream.status, headers, content)


def parse_payload(body: bytes) -> tuple[dict, None] | tuple[None, Response]:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return None, openai_error(400, f"The request body is not valid JSON: {exc}", code="invalid_json")
    if not isinstance(payload, dict):
        return None, openai_error(400, "The request body must be a JSON object.", code="invalid_body")
    return payload, None


async def _relay(upstream: UpstreamResponse, log) -> AsyncIterator[bytes]:
    try:
        async for chunk in upstream.aiter_raw():
            yield chunk
    except UpstreamError as exc:
        # Headers are out already: all we can do is end the stream and say why in the log.
        log.warning("upstream_stream_broken", error=type(exc).__name__)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)
