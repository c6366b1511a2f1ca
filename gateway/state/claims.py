"""Which tenant created which server-side object: response, thread message and conversation ids.

With a server-side upstream key every tenant's objects live in one upstream account, so the
upstream resolves any id it is given: tenant B naming tenant A's response id would continue,
read or delete A's conversation. The gateway therefore notes each id it sees created for a
tenant (``claim``: a tiny record in the state store under the tenant's namespace) and refuses
an id the caller's tenant never created (``owned``). Without a server-side key each client's
own upstream key keeps tenants apart already, and nothing is noted.

A claim lives as long as the store keeps it (``state.ttl_s`` of idleness, and its tenant's
byte budget, ``state.tenant_max_chain_bytes``): an id older than that reads as unknown, exactly
as for another tenant. Another tenant's volume never evicts it (``gateway.state.shares``).

A store that cannot answer is not a "no": ids are unguessable, and an agent must not lose its
own response because Redis stalled. The store answers from the claims this process made when it
can (``gateway.state.ledger``); an id it cannot vouch for either way is let through, logged
(``state_unavailable`` with ``fail_open``) and counted (``claims_unverified``), never refused.
"""

from __future__ import annotations

import structlog

from gateway.config import Config
from gateway.state.base import StateStore

ANONYMOUS = "c:-:"  # the namespace of clients without a credential


def enforced(config: Config, provider: str | None) -> bool:
    """Does the gateway spend its own key for a protocol whose upstream is ``provider`` (its
    ``UpstreamSpec.config``; None: the default upstream), so the upstream cannot tell tenants
    apart? Its own key, or its own cloud credentials (``<provider>_credentials: gateway``)."""
    up = config.upstream
    if provider is None:
        return bool(up.api_key)
    return bool(up.setting(provider, "api_key")) or up.setting(provider, "credentials") == "gateway"


def key(namespace: str, kind: str, ident: str) -> str:
    return (namespace or ANONYMOUS) + "own:" + kind + ":" + ident


async def claim(store: StateStore, namespace: str, kind: str, ident: str) -> None:
    await store.save_claim(key(namespace, kind, ident))


async def owned(store: StateStore, namespace: str, kind: str, ident: str) -> bool:
    """Did the tenant create the object? Unknown to an unavailable store counts as yes."""
    found = await store.claimed(key(namespace, kind, ident))
    if found is None:
        structlog.get_logger("loopguard").warning("state_unavailable", op="owned", kind=kind, fail_open=True)
        return True
    return found
