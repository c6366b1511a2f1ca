"""Every other /v1/* route (models, embeddings, files, ...): relayed untouched, streamed."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from gateway.server.body import BodyTooLarge, read_body
from gateway.server.context import Gateway, upstream_path
from gateway.server.responses import RelayStream, openai_error
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamError


async def passthrough(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    started = time.perf_counter()
    try:
        body = await read_body(request, gateway.config.limits.max_body_bytes)
    except BodyTooLarge:
        return too_large(gateway)
    outgoing = UpstreamRequest(
        method=request.method,
        path=upstream_path(request.url.path),
        query=request.scope.get("query_string", b""),
        headers=gateway.forward_headers(request.headers.raw, identity=False),
        body=body,
    )
    try:
        upstream = await gateway.upstream.send(outgoing)
    except UpstreamError as exc:
        return upstream_failed(gateway, exc, request.url.path)
    gateway.log.info(
        "request", method=request.method, path=request.url.path, status=upstream.status,
        upstream_ms=round((time.perf_counter() - started) * 1000, 2), stream=True, action="pass",
    )
    return RelayStream(upstream.status, upstream.headers, upstream.aiter_raw(), upstream.aclose)


def too_large(gateway: Gateway) -> Response:
    limit = gateway.config.limits.max_body_bytes
    return openai_error(413, f"Request body exceeds the gateway limit of {limit} bytes.", code="request_too_large")


def upstream_failed(gateway: Gateway, exc: UpstreamError, path: str) -> Response:
    gateway.log.warning("upstream_error", path=path, error=type(exc).__name__, detail=str(exc)[:300])
    kind = "timed out" if exc.status == 504 else "could not be reached"
    return openai_error(exc.status, f"The upstream model provider {kind}.", type="upstream_error", code=exc.code)
