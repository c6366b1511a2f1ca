"""Server-side objects a request names, checked against the caller's tenant (``state/claims.py``).

Before judging: a request naming a response, thread message or conversation its tenant never
created is refused with 404 in the protocol's error shape, as the upstream answers an id it does
not know (Anthropic's carries ``thread_not_found``, so the SDK sends the whole history as a new
thread). After the reply: the ids it creates are claimed for the tenant. Both only when the
gateway spends its own upstream key for the protocol.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from gateway.guard import store as memory
from gateway.pipeline.exchange import Exchange
from gateway.state import claims
from gateway.web.responses import error_response


async def foreign(ex: Exchange) -> Response | None:
    """The 404 for the first named id the caller's tenant did not create; None when all are its own."""
    gateway, adapter = ex.gateway, ex.adapter
    if not claims.enforced(gateway.config, adapter.declared.upstream.config):
        return None
    for kind, ident in adapter.history.references(ex.payload) if adapter.history is not None else []:
        if not await memory.owns(gateway.store, ex.namespace, kind, ident, ex.log):
            declared = next((o for o in adapter.declared.owned if o.kind == kind), None)
            what, code = (declared.called, declared.code) if declared else ("Object", "not_found")
            ex.log.info("reference_refused", kind=kind, detail="not created in the caller's tenant")
            return error_response(
                404, f"{what} with id '{ident}' not found.", "not_found_error", code, shape=adapter.authored.error_body
            )
    return None


async def claim_created(ex: Exchange, reply: dict[str, Any]) -> None:
    if not claims.enforced(ex.gateway.config, ex.adapter.declared.upstream.config):
        return
    for kind, ident in ex.adapter.history.created(ex.payload, reply) if ex.adapter.history is not None else []:
        await memory.claim(ex.gateway.store, ex.namespace, kind, ident)
