"""Every other /v1/* route (models, embeddings, files, ...): relayed untouched, streamed, and
counted by route family, so agent traffic the gateway does not judge is visible in /metrics."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from gateway.context import Gateway, upstream_path
from gateway.protocols.declaration import UpstreamSpec
from gateway.protocols.roles import Adapter
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamError
from gateway.web.refused import read_or_refuse, upstream_failed
from gateway.web.responses import RelayStream, Shape, openai_shape


async def passthrough(
    request: Request, protocol: str = "", shape: Shape = openai_shape, spec: UpstreamSpec | None = None
) -> Response:
    """``protocol`` (an adapter's name) and ``spec``: a protocol served by its own provider."""
    gateway: Gateway = request.app.state.gateway
    started = time.perf_counter()
    body = await read_or_refuse(gateway, request.scope, request.receive, started, shape)
    if isinstance(body, Response):
        return body
    outgoing = UpstreamRequest(
        method=request.method,
        path=upstream_path(request.url.path, spec),
        query=gateway.forward_query(request.scope.get("query_string", b""), spec),
        headers=gateway.forward_headers(request.headers.raw, identity=False, spec=spec),
        body=body,
    )
    gateway.metrics.unguarded(request.url.path)
    sent = time.perf_counter()
    try:
        upstream = await gateway.upstream_for(protocol).send(outgoing)
    except UpstreamError as exc:
        return upstream_failed(gateway, exc, request.url.path, request.method, shape)
    gateway.log.info(
        "request",
        method=request.method,
        path=request.url.path,
        status=upstream.status,
        upstream_ms=_ms(time.perf_counter() - sent),
        overhead_ms=_ms(sent - started),
        stream=True,
        action="pass",
    )
    return RelayStream(upstream.status, upstream.headers, upstream.aiter_raw(), upstream.aclose)


def passthrough_for(adapter: Adapter) -> Callable[[Request], Awaitable[Response]]:
    """Sub-routes of a guarded protocol that another provider serves (Anthropic's
    /v1/messages/count_tokens): relayed untouched to that provider, errors in its shape."""

    async def endpoint(request: Request) -> Response:
        return await passthrough(request, adapter.name, adapter.authored.error_body, adapter.declared.upstream)

    endpoint.__name__ = f"passthrough_{adapter.name}"
    return endpoint


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)
