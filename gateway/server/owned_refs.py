"""The stored objects a relayed request's body names, checked against the caller's tenant, and
the ones an answer to the tenant's own object names, claimed for it (``protocols/objects.py``).

Only with a server-side key for the upstream, and only for families the operator did not share.
A body that is no JSON names nothing (a multipart upload's bytes are the file itself).
"""

from __future__ import annotations

from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import Response

from gateway.context import Gateway
from gateway.guard import store as memory
from gateway.protocols.objects import Malformed, Named, created_in, named_in
from gateway.protocols.roles import Adapter
from gateway.state.session import client_namespace
from gateway.web import sharing
from gateway.wire import codec

_log = structlog.get_logger("loopguard")


async def foreign_in(request: Request, adapter: Adapter, body: bytes) -> Response | None:
    """The refusal of a body naming an object its tenant did not create (404), or naming one
    with a value no id is (400); None when it names only the tenant's own."""
    if not body or request.headers.get("content-type", "").lower().startswith("multipart/"):
        return None
    try:
        payload = codec.loads(body)
    except codec.DecodeError:
        return None  # the upstream answers it; nothing in it is read as a reference
    gateway: Gateway = request.app.state.gateway
    try:
        named = named_in(payload, sharing.kinds(gateway.config, gateway.protocols.adapters, adapter))
    except Malformed as exc:
        return sharing.malformed(adapter, exc.key)
    return await first_foreign(gateway, adapter, client_namespace(request.headers), named)


async def first_foreign(gateway: Gateway, adapter: Adapter, namespace: str, named: list[Named]) -> Response | None:
    for each in named:
        if not await memory.owns(gateway.store, namespace, each.kind.kind, each.ident, _log):
            return sharing.not_found(adapter, each.kind, each.ident)
    return None


async def claim_named(gateway: Gateway, adapter: Adapter, namespace: str, answer: Any) -> None:
    """Claim what an answer to the tenant's own object names at its top level."""
    kinds = sharing.kinds(gateway.config, gateway.protocols.adapters, adapter)
    for each in created_in(answer, kinds):
        await memory.claim(gateway.store, namespace, each.kind.kind, each.ident)
