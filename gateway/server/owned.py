"""The relayed routes that name a tenant's server-side objects: ``/v1/responses/{id}`` (GET,
DELETE, and what hangs below it) and the Conversations API (``/v1/conversations``).

With a server-side upstream key (``state/owned.py``), an id the caller's tenant did not create
is refused with 404 before anything is relayed, and a conversation created here is claimed for
the tenant (its id is read from the upstream's answer). Without one they are relayed untouched,
like every other /v1/* route.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from gateway.protocols import codec
from gateway.server.passthrough import passthrough
from gateway.web.refused import refused
from gateway.web.responses import error_response, relay
from gateway.state import owned
from gateway.state.session import client_namespace

_CREATES = "conversation"


def of(kind: str):
    """The relay of a route whose ``{ident}`` names an object of ``kind``."""
    async def endpoint(request: Request) -> Response:
        gateway = request.app.state.gateway
        if owned.enforced(gateway.config, "chat"):
            namespace = client_namespace(request.headers)
            ident = request.path_params["ident"]
            if not await owned.owned(gateway.store, namespace, kind, ident):
                answer = error_response(404, f"No {kind} found with id '{ident}'.", "invalid_request_error",
                                        "not_found")
                return refused(gateway, request.method, request.url.path, answer, 0.0)
        return await passthrough(request)

    endpoint.__name__ = f"owned_{kind}"
    return endpoint


async def create_conversation(request: Request) -> Response:
    """``POST /v1/conversations``: relayed; with a server-side key the new id is claimed."""
    response = await passthrough(request)
    gateway = request.app.state.gateway
    if not owned.enforced(gateway.config, "chat") or response.status_code != 200:
        return response
    body = await response.aread()
    try:
        ident = codec.loads(body).get("id")
    except (codec.DecodeError, AttributeError):
        ident = None
    if isinstance(ident, str) and ident:
        await owned.claim(gateway.store, client_namespace(request.headers), _CREATES, ident)
    return relay(response.status_code, list(response.raw_headers), body)
