"""The relayed routes that name a tenant's server-side objects (``Declaration.owned``): the
Responses API's ``/v1/responses/{id}`` (GET, DELETE, and what hangs below it) and its
Conversations API (``/v1/conversations``).

With a server-side upstream key (``state/claims.py``), an id the caller's tenant did not create
is refused with 404 before anything is relayed, and an object created here is claimed for the
tenant (its id is read from the upstream's answer, ``Owned.creates``). Without one they are
relayed untouched, like every other path of the protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.protocols.declaration import Owned
from gateway.protocols.roles import Adapter
from gateway.server.passthrough import passthrough_for
from gateway.state import claims
from gateway.state.session import client_namespace
from gateway.web.refused import refused
from gateway.web.responses import RelayStream, error_response, relay
from gateway.wire import codec

Endpoint = Callable[[Request], Awaitable[Response]]


def routes(adapter: Adapter, methods: list[str]) -> list[Route]:
    """The relayed routes of the adapter's tenant-owned objects, checked against the tenant."""
    out = []
    for kind in adapter.declared.owned:
        if not kind.collection:
            continue
        if kind.creates is not None:
            out.append(Route(kind.collection, creating(adapter, kind), methods=["POST"]))
        named = of(adapter, kind)
        out += [
            Route(kind.collection + "/{ident}", named, methods=methods),
            Route(kind.collection + "/{ident}/{rest:path}", named, methods=methods),
        ]
    return out


def of(adapter: Adapter, kind: Owned) -> Endpoint:
    """The relay of a route whose ``{ident}`` names an object of ``kind``."""
    relay_it = passthrough_for(adapter)

    async def endpoint(request: Request) -> Response:
        gateway = request.app.state.gateway
        if claims.enforced(gateway.config, adapter.declared.upstream.config):
            namespace = client_namespace(request.headers)
            ident = request.path_params["ident"]
            if not await claims.owned(gateway.store, namespace, kind.kind, ident):
                answer = error_response(
                    404,
                    f"No {kind.kind} found with id '{ident}'.",
                    "invalid_request_error",
                    "not_found",
                    shape=adapter.authored.error_body,
                )
                return refused(gateway, request.method, request.url.path, answer, 0.0)
        return await relay_it(request)

    endpoint.__name__ = f"owned_{kind.kind}"
    return endpoint


def creating(adapter: Adapter, kind: Owned) -> Endpoint:
    """``POST {collection}``: relayed; with a server-side key the new id is claimed."""
    relay_it = passthrough_for(adapter)

    async def endpoint(request: Request) -> Response:
        response = await relay_it(request)
        gateway = request.app.state.gateway
        enforced = claims.enforced(gateway.config, adapter.declared.upstream.config)
        if not enforced or response.status_code != 200 or not isinstance(response, RelayStream):
            return response  # a 200 is the upstream's answer, relayed as it streams
        body = await response.aread()
        try:
            ident = kind.creates(codec.loads(body)) if kind.creates else None
        except codec.DecodeError:
            ident = None
        if isinstance(ident, str) and ident:
            await claims.claim(gateway.store, client_namespace(request.headers), kind.kind, ident)
        return relay(response.status_code, list(response.raw_headers), body)

    endpoint.__name__ = f"create_{kind.kind}"
    return endpoint
