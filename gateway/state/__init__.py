"""Per-session state between requests: the store interface, its backends, session identity."""

from __future__ import annotations

from gateway.config import StateConfig
from gateway.state.base import EMPTY, ChainRecord, HistoryMark, SessionState, StateStore, VetoRecord
from gateway.state.fleet import FleetStore
from gateway.state.fleet_memory import MemoryFleet
from gateway.state.memory import MemoryStore


def build_store(config: StateConfig) -> StateStore:
    """The configured backend. Building one never connects: Redis is reached on first use, so
    a gateway starts (and serves, degraded) even while Redis is down."""
    if config.backend == "redis":
        from gateway.state.redis import RedisStore  # imported only when configured
        from gateway.state.redis_topology import address

        return RedisStore(
            config.url,
            mode=config.mode,
            sentinels=tuple(address(sentinel) for sentinel in config.sentinels),
            service=config.service,
            key_prefix=config.key_prefix,
            ttl_s=config.ttl_s,
            op_timeout_s=config.op_timeout_s,
            retry_after_s=config.retry_after_s,
            max_connections=config.max_connections,
            mirror_sessions=config.max_sessions if config.mirror else 0,
            tenant_max_sessions=config.tenant_max_sessions or config.max_sessions,
            tenant_max_chain_bytes=config.tenant_max_chain_bytes or config.max_chain_bytes,
            local_claims=config.local_claims,
        )
    return MemoryStore(
        max_sessions=config.max_sessions,
        ttl_s=config.ttl_s,
        max_chain_bytes=config.max_chain_bytes,
        max_veto_bytes=config.max_veto_bytes,
        tenant_max_sessions=config.tenant_max_sessions,
        tenant_max_chain_bytes=config.tenant_max_chain_bytes,
    )


def build_fleet(store: StateStore) -> FleetStore:
    """The fleet's memory beside ``store``: on the same Redis, shared by every replica, or in
    this process beside a memory store."""
    if isinstance(store, MemoryStore):  # redis-py (and what it imports) is not loaded for nothing
        return MemoryFleet()
    from gateway.state.redis import RedisStore  # the module imports redis-py only, connects to nothing

    if isinstance(store, RedisStore):
        from gateway.state.fleet_redis import RedisFleet

        return RedisFleet(store.client, store.key_prefix, store.run, store.background)
    return MemoryFleet()


__all__ = [
    "EMPTY",
    "ChainRecord",
    "FleetStore",
    "HistoryMark",
    "MemoryStore",
    "SessionState",
    "StateStore",
    "VetoRecord",
    "build_fleet",
    "build_store",
]
