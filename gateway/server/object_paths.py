"""The relayed routes that name a tenant's stored objects (``Declaration.owned``): the Responses
API's ``/v1/responses/{id}``, conversations, files, batches, vector stores, Anthropic's message
batches, Google's cached contents ... each ``{collection}/{ident}`` and what hangs below it, for
every method.

With a server-side upstream key (``state/claims.py``): an id the caller's tenant did not create
is refused with 404 before anything is relayed; an object created here is claimed for the
tenant (its id read from the upstream's answer, ``Owned.creates``, and what the answer to the
tenant's own object names, ``protocols/objects.py``); the collection itself (``GET /v1/files``
lists every tenant's) is refused with 403 unless the operator shared it
(``auth.shared_routes``); ids a body names are checked like the path's. Without one they are
relayed untouched, like every other path of the protocol.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.context import Gateway
from gateway.guard import store as memory
from gateway.protocols.declaration import Owned
from gateway.protocols.roles import Adapter
from gateway.server import owned_refs
from gateway.server.passthrough import relayed
from gateway.state import claims
from gateway.state.session import client_namespace
from gateway.web import sharing
from gateway.web.refused import read_or_refuse, refused
from gateway.web.responses import RelayStream, relay
from gateway.wire import codec

Endpoint = Callable[[Request], Awaitable[Response]]


def routes(adapter: Adapter, methods: list[str]) -> list[Route]:
    """The relayed routes of the adapter's tenant-owned objects, checked against the tenant."""
    out = []
    for kind in adapter.declared.owned:
        if not kind.collection:
            continue
        named = of(adapter, kind)
        out += [
            Route(kind.collection, collection(adapter, kind), methods=methods),
            Route(kind.collection + "/{ident}", named, methods=methods),
            Route(kind.collection + "/{ident}/{rest:path}", named, methods=methods),
        ]
    return out


def _unchecked(request: Request, adapter: Adapter) -> bool:
    """No check: the gateway spends no key of its own there, or the operator shared the route."""
    gateway: Gateway = request.app.state.gateway
    return not claims.enforced(gateway.config, adapter.declared.upstream.config) or sharing.is_shared(
        gateway.config, request.method, request.url.path
    )


def of(adapter: Adapter, kind: Owned) -> Endpoint:
    """The relay of a route whose ``{ident}`` names an object of ``kind`` (Google's
    ``{ident}:method`` names it too), or a ``POST {collection}/{action}`` naming none."""

    async def endpoint(request: Request) -> Response:
        if _unchecked(request, adapter):
            return await relayed(request, adapter)
        gateway: Gateway = request.app.state.gateway
        started = time.perf_counter()
        body = await read_or_refuse(gateway, request.scope, request.receive, started, adapter.authored.error_body)
        if isinstance(body, Response):
            return body
        ident = request.path_params["ident"].partition(":")[0]
        below = "rest" in request.path_params
        action = request.method == "POST" and not below and ident in kind.actions
        namespace = client_namespace(request.headers)
        if not action and not await memory.owns(gateway.store, namespace, kind.kind, ident, gateway.log):
            answer = sharing.not_found(adapter, kind, ident)
            return refused(gateway, request.method, request.url.path, answer, started)
        foreign = await owned_refs.foreign_in(request, adapter, body)
        if foreign is not None:
            return refused(gateway, request.method, request.url.path, foreign, started)
        response = await relayed(request, adapter, body, started)
        if request.method == "POST" or (request.method == "GET" and not below):
            return await _claiming(gateway, adapter, namespace, response, None)
        return response

    endpoint.__name__ = f"owned_{kind.kind}"
    return endpoint


def collection(adapter: Adapter, kind: Owned) -> Endpoint:
    """``{collection}`` itself: ``POST`` creates one (claimed for the tenant); any other method
    (a list of every tenant's) is refused unless shared."""

    async def endpoint(request: Request) -> Response:
        if _unchecked(request, adapter):
            return await relayed(request, adapter)
        gateway: Gateway = request.app.state.gateway
        started = time.perf_counter()
        if request.method != "POST" or kind.creates is None:
            answer = sharing.not_shared(request.method, request.url.path, adapter.authored.error_body)
            return refused(gateway, request.method, request.url.path, answer, started)
        body = await read_or_refuse(gateway, request.scope, request.receive, started, adapter.authored.error_body)
        if isinstance(body, Response):
            return body
        foreign = await owned_refs.foreign_in(request, adapter, body)
        if foreign is not None:
            return refused(gateway, request.method, request.url.path, foreign, started)
        response = await relayed(request, adapter, body, started)
        return await _claiming(gateway, adapter, client_namespace(request.headers), response, kind)

    endpoint.__name__ = f"collection_{kind.kind}"
    return endpoint


async def _claiming(
    gateway: Gateway, adapter: Adapter, namespace: str, response: Response, created: Owned | None
) -> Response:
    """The upstream's answer relayed; a JSON 2xx read whole first, and the objects it names
    (``created``: the one it made) claimed for the tenant."""
    if not isinstance(response, RelayStream) or not 200 <= response.status_code < 300 or not _json(response):
        return response
    body = await response.aread()
    try:
        answer: Any = codec.loads(body)
    except codec.DecodeError:
        answer = None
    ident = created.creates(answer) if created is not None and created.creates is not None else None
    try:
        if isinstance(ident, str) and ident and created is not None:
            await memory.claim(gateway.store, namespace, created.kind, ident)
        await owned_refs.claim_named(gateway, adapter, namespace, answer)
    except Exception as exc:  # the answer is the client's all the same
        gateway.log.warning("state_unavailable", op="claim", error=type(exc).__name__)
    return relay(response.status_code, list(response.raw_headers), body)


def _json(response: Response) -> bool:
    kind = next((v for k, v in response.raw_headers if k.lower() == b"content-type"), b"")
    return b"json" in kind.lower() and b"jsonl" not in kind.lower()
