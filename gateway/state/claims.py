"""Which tenant created which server-side object: response, thread message and conversation ids.

With a server-side upstream key every tenant's objects live in one upstream account, so the
upstream resolves any id it is given: tenant B naming tenant A's response id would continue,
read or delete A's conversation. The gateway therefore notes each id it sees created for a
tenant (``claim``: a tiny record in the state store under the tenant's namespace) and refuses
an id the caller's tenant never created (``owned``). Without a server-side key each client's
own upstream key keeps tenants apart already, and nothing is noted.

A claim lives as long as the store keeps it (``state.ttl_s`` of idleness, and the memory
store's byte budget): an id older than that reads as unknown, exactly as for another tenant.
"""

from __future__ import annotations

from gateway.config import Config
from gateway.state.base import ChainRecord, StateStore

_CLAIM = ChainRecord(())
ANONYMOUS = "c:-:"  # the namespace of clients without a credential


def enforced(config: Config, provider: str | None) -> bool:
    """Does the gateway spend its own key for a protocol whose upstream is ``provider`` (its
    ``UpstreamSpec.config``; None: the default upstream), so the upstream cannot tell tenants
    apart?"""
    up = config.upstream
    return bool(up.api_key if provider is None else up.setting(provider, "api_key"))


def key(namespace: str, kind: str, ident: str) -> str:
    return (namespace or ANONYMOUS) + "own:" + kind + ":" + ident


async def claim(store: StateStore, namespace: str, kind: str, ident: str) -> None:
    await store.save_response_chain(key(namespace, kind, ident), _CLAIM)


async def owned(store: StateStore, namespace: str, kind: str, ident: str) -> bool:
    return await store.response_chain(key(namespace, kind, ident)) is not None
