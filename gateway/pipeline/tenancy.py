"""Server-side objects a request names, checked against the caller's tenant (``state/claims.py``).

Before judging: a request naming a response, thread message, conversation, file, vector store,
cached content ... its tenant never created (by its history role's references, by a key of the
body that names one, ``protocols/objects.py``, or by its path: Google's
``tunedModels/{id}:generateContent``) is refused with 404 in the protocol's error shape, as the
upstream answers an id it does not know (Anthropic's carries ``thread_not_found``, so the SDK
sends the whole history as a new thread). A reference that is no id at all (a list, an object)
is refused with 400 whatever the key: never read past. After the reply: the ids it creates are
claimed for the tenant. Both checks only when the gateway spends its own upstream key for the
protocol, and not for families the operator shared (``auth.shared_routes``).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from gateway.guard import store as memory
from gateway.pipeline.exchange import Exchange
from gateway.protocols.declaration import Owned
from gateway.protocols.objects import Malformed, Named, ident_of, named_in
from gateway.state import claims
from gateway.web import sharing


async def foreign(ex: Exchange) -> Response | None:
    """The 400 for a reference no id is, or the 404 for the first named id the caller's tenant
    did not create; None when all are its own."""
    gateway, adapter = ex.gateway, ex.adapter
    references = adapter.history.references(ex.payload) if adapter.history is not None else []
    for kind, ident in references:
        if not isinstance(ident, str):
            return sharing.malformed(ex.adapter, kind)
    if not claims.enforced(gateway.config, adapter.declared.upstream.config):
        return None
    kinds = sharing.kinds(gateway.config, gateway.protocols.adapters, adapter)
    by_kind = {o.kind: o for o in (*adapter.declared.owned, *kinds)}
    shared = {o.kind for o in by_kind.values() if sharing.family_shared(gateway.config, o)}
    for kind, ident in references:
        if kind not in shared and not await memory.owns(gateway.store, ex.namespace, kind, ident, ex.log):
            return _refused(ex, by_kind.get(kind), ident)
    try:
        named = [*_in_path(ex.path, kinds), *named_in(ex.payload, kinds)]
    except Malformed as exc:
        return sharing.malformed(ex.adapter, exc.key)
    for each in named:
        if not await memory.owns(gateway.store, ex.namespace, each.kind.kind, each.ident, ex.log):
            return _refused(ex, each.kind, each.ident)
    return None


def _in_path(path: str, kinds: tuple[Owned, ...]) -> list[Named]:
    """The object a guarded path names (a tuned model generating): ``{collection}/{ident}...``."""
    found = []
    for kind in kinds:
        if kind.collection and path.startswith(kind.collection + "/"):
            ident = (
                ident_of(kind, path.removeprefix(kind.collection + "/").partition("/")[0]) if kind.resource else None
            )
            ident = ident or path.removeprefix(kind.collection + "/").partition("/")[0].partition(":")[0]
            found.append(Named(kind, ident))
    return found


def _refused(ex: Exchange, declared: Owned | None, ident: str) -> Response:
    ex.log.info(
        "reference_refused", kind=declared.kind if declared else "", detail="not created in the caller's tenant"
    )
    return sharing.not_found(ex.adapter, declared, ident)


async def claim_created(ex: Exchange, reply: dict[str, Any]) -> None:
    if not claims.enforced(ex.gateway.config, ex.adapter.declared.upstream.config):
        return
    created = ex.adapter.history.created(ex.payload, reply) if ex.adapter.history is not None else []
    stored = ((o.kind, o.stored(ex.payload, reply)) for o in ex.adapter.declared.owned if o.stored is not None)
    for kind, ident in (*created, *stored):
        if isinstance(ident, str) and ident:
            await memory.claim(ex.gateway.store, ex.namespace, kind, ident)
