"""Every other /v1/* route (models, embeddings, files, ...): relayed untouched, streamed, and
counted by route family, so agent traffic the gateway does not judge is visible in /metrics."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from gateway.protocols.base import Adapter
from gateway.server.body import BodyTooLarge, read_body
from gateway.server.context import Gateway, upstream_path
from gateway.server.responses import RelayStream, Shape, error_response, openai_shape
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamError


async def passthrough(request: Request, protocol: str = "chat", shape: Shape = openai_shape) -> Response:
    gateway: Gateway = request.app.state.gateway
    started = time.perf_counter()
    body = await read_or_refuse(gateway, request.scope, request.receive, started, shape)
    if isinstance(body, Response):
        return body
    outgoing = UpstreamRequest(
        method=request.method,
        path=upstream_path(request.url.path),
        query=request.scope.get("query_string", b""),
        headers=gateway.forward_headers(request.headers.raw, identity=False, protocol=protocol),
        body=body,
    )
    gateway.metrics.unguarded(request.url.path)
    sent = time.perf_counter()
    try:
        upstream = await gateway.upstream_for(protocol).send(outgoing)
    except UpstreamError as exc:
        return upstream_failed(gateway, exc, request.url.path, request.method, shape)
    gateway.log.info(
        "request", method=request.method, path=request.url.path, status=upstream.status,
        upstream_ms=_ms(time.perf_counter() - sent), overhead_ms=_ms(sent - started), stream=True, action="pass",
    )
    return RelayStream(upstream.status, upstream.headers, upstream.aiter_raw(), upstream.aclose)


def passthrough_for(adapter: Adapter) -> Callable[[Request], Awaitable[Response]]:
    """Sub-routes of a guarded protocol that another provider serves (Anthropic's
    /v1/messages/count_tokens): relayed untouched to that provider, errors in its shape."""
    async def endpoint(request: Request) -> Response:
        return await passthrough(request, adapter.name, adapter.error_body)

    endpoint.__name__ = f"passthrough_{adapter.name}"
    return endpoint


def too_large(gateway: Gateway, shape: Shape = openai_shape) -> Response:
    limit = gateway.config.limits.max_body_bytes
    return error_response(413, f"Request body exceeds the gateway limit of {limit} bytes.",
                          code="request_too_large", shape=shape)


async def read_or_refuse(gateway: Gateway, scope: dict, receive, started: float,
                         shape: Shape = openai_shape) -> bytes | Response:
    """The request body, or the logged 413 answer when it is over the configured limit."""
    try:
        return await read_body(scope, receive, gateway.config.limits.max_body_bytes)
    except BodyTooLarge:
        return refused(gateway, scope["method"], scope["path"], too_large(gateway, shape), started)


def refused(gateway: Gateway, method: str, path: str, response: Response, started: float) -> Response:
    """Log the request line of an answer the gateway gave without asking the upstream."""
    gateway.log.info("request", method=method, path=path, status=response.status_code, stream=False,
                     action="pass", upstream_ms=0.0, overhead_ms=_ms(time.perf_counter() - started))
    return response


def upstream_failed(gateway: Gateway, exc: UpstreamError, path: str, method: str = "POST",
                    shape: Shape = openai_shape) -> Response:
    # The request line of a failed request: operators count requests by status from these.
    gateway.log.warning("request", method=method, path=path, status=exc.status, action="pass",
                        error=type(exc).__name__, detail=str(exc)[:300])
    kind = "timed out" if exc.status == 504 else "could not be reached"
    return error_response(exc.status, f"The upstream model provider {kind}.", type="upstream_error",
                          code=exc.code, shape=shape)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)
