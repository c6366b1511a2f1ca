"""Every other /v1/* route (models, embeddings, files, ...): relayed untouched, streamed, and
counted by route family, so agent traffic the gateway does not judge is visible in /metrics.

With a server-side upstream key, a route is relayed only as ``web/sharing.py`` allows: stateless
or shared by the operator; the stored-object routes go through ``object_paths`` instead.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from gateway.context import Gateway, path_for_upstream
from gateway.protocols.roles import Adapter
from gateway.server import owned_refs
from gateway.state import claims
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamError
from gateway.web import sharing
from gateway.web.refused import read_or_refuse, refused, upstream_failed
from gateway.web.responses import RelayStream

Endpoint = Callable[[Request], Awaitable[Response]]


async def relayed(request: Request, adapter: Adapter, body: bytes | None = None, started: float = 0.0) -> Response:
    """The request relayed untouched to ``adapter``'s upstream, errors in its shape; ``body``:
    already read (with the time it was ``started``)."""
    gateway: Gateway = request.app.state.gateway
    spec, shape = adapter.declared.upstream, adapter.authored.error_body
    if body is None:
        started = time.perf_counter()
        read = await read_or_refuse(gateway, request.scope, request.receive, started, shape)
        if isinstance(read, Response):
            return read
        body = read
    outgoing = UpstreamRequest(
        method=request.method,
        path=path_for_upstream(request.scope, spec),
        query=gateway.forward_query(request.scope.get("query_string", b""), spec),
        headers=gateway.forward_headers(request.headers.raw, identity=False, spec=spec),
        body=body,
        client_body=body,
    )
    gateway.metrics.unguarded(request.url.path)
    sent = time.perf_counter()
    try:
        upstream = await gateway.upstream_for(adapter.name).send(outgoing)
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


def passthrough_for(adapter: Adapter | None = None) -> Endpoint:
    """The relay of a protocol's other paths (``adapter``: Anthropic's count_tokens, Google's
    model list; None: every other /v1/* path, to the default upstream). With a server-side key,
    only a route that stores nothing or that the operator shared goes on, its body's object
    references checked; any other is refused (403)."""

    async def endpoint(request: Request) -> Response:
        gateway: Gateway = request.app.state.gateway
        relay_to = adapter or gateway.protocols.default
        adapters = gateway.protocols.adapters
        method, path = request.method, request.url.path
        if not sharing.free(gateway.config, adapters, relay_to, method, path):
            answer = sharing.not_shared(method, path, relay_to.authored.error_body)
            return refused(gateway, method, path, answer, time.perf_counter())
        if not claims.enforced(gateway.config, relay_to.declared.upstream.config) or sharing.is_shared(
            gateway.config, method, path
        ):
            return await relayed(request, relay_to)
        started = time.perf_counter()
        body = await read_or_refuse(gateway, request.scope, request.receive, started, relay_to.authored.error_body)
        if isinstance(body, Response):
            return body
        foreign = await owned_refs.foreign_in(request, relay_to, body)
        if foreign is not None:
            return refused(gateway, method, path, foreign, started)
        return await relayed(request, relay_to, body, started)

    endpoint.__name__ = f"passthrough_{adapter.name if adapter else 'default'}"
    return endpoint


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)
