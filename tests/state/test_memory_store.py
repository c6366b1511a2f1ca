"""The in-memory store: bounded by an LRU of sessions and a TTL, whatever the traffic."""

import time

from support.fresh import modules_loaded

from gateway.config import StateConfig
from gateway.state import EMPTY, HistoryMark, MemoryStore, VetoRecord, build_store
from gateway.state.memory import MAX_VETOES_PER_SESSION


def veto(n: int) -> VetoRecord:
    return VetoRecord(n, f"h{n}", ({"role": "assistant", "content": None}, {"role": "tool", "content": str(n)}))


async def test_many_sessions_stay_within_max_sessions_and_evictions_are_counted():
    store = MemoryStore(max_sessions=100, ttl_s=60)
    for i in range(1000):
        await store.session_state(f"s{i}", HistoryMark(i, "d"))  # every request leaves its mark
    assert len(store) == 100
    assert store.evictions == 900 and store.expirations == 0
    assert await store.session_state("s0") is EMPTY  # least recently used: gone
    assert (await store.session_state("s999")).mark == HistoryMark(999, "d")


async def test_a_session_in_use_is_not_the_one_evicted():
    store = MemoryStore(max_sessions=3, ttl_s=60)
    for name in ("a", "b", "c"):
        await store.add_veto(name, veto(1))
    await store.session_state("a")  # a is used again: b is now the least recently used
    await store.add_veto("d", veto(1))
    assert [len(await store.vetoes(n)) for n in "abcd"] == [1, 0, 1, 1]
    assert store.evictions == 1


async def test_idle_sessions_expire_after_ttl():
    store = MemoryStore(max_sessions=100, ttl_s=0.05)
    await store.add_veto("old", veto(1))
    await store.session_state("idle", HistoryMark(3, "x"))
    time.sleep(0.08)
    assert await store.vetoes("old") == []
    assert store.expirations == 1
    await store.session_state("new", HistoryMark(1, "y"))  # a new session drops expired ones in front
    assert len(store) == 1 and store.expirations == 2 and store.evictions == 0


async def test_session_state_returns_vetoes_marks_and_swaps_the_mark():
    store = MemoryStore()
    assert await store.session_state("s", HistoryMark(2, "first")) is EMPTY
    await store.add_veto("s", veto(1))
    await store.add_veto("s", veto(2))
    store.mark_compacted("s", HistoryMark(2, "first"))
    state = await store.session_state("s", HistoryMark(4, "abc"))
    assert state.vetoes == (veto(1), veto(2))
    assert state.mark == HistoryMark(2, "first") and state.compacted == HistoryMark(2, "first")
    assert (await store.session_state("s")).mark == HistoryMark(4, "abc")  # swapped in
    store.mark_compacted("s", None)
    assert (await store.session_state("s")).compacted is None
    store.mark_compacted("unknown", HistoryMark(1, "x"))  # no session, nothing to mark
    assert len(store) == 1 and store.degradations == 0


async def test_vetoes_per_session_are_capped():
    store = MemoryStore()
    for n in range(MAX_VETOES_PER_SESSION + 6):
        await store.add_veto("s", veto(n))
    vetoes = await store.vetoes("s")
    assert len(vetoes) == MAX_VETOES_PER_SESSION and vetoes[0] == veto(6)


def test_build_store_uses_the_configured_bounds():
    store = build_store(StateConfig(max_sessions=7, ttl_s=12))
    assert isinstance(store, MemoryStore) and store.max_sessions == 7 and store.ttl_s == 12


def test_records_survive_serialization():
    assert VetoRecord.loads(veto(3).dumps()) == veto(3)
    assert HistoryMark.loads(HistoryMark(9, "b").dumps()) == HistoryMark(9, "b")


async def test_end_run_forgets_the_vetoes_and_keeps_the_mark():
    store = MemoryStore()
    await store.session_state("s", HistoryMark(8, "run-1"))
    await store.add_veto("s", veto(8))
    store.end_run("s")
    store.end_run("unknown")  # nothing to forget: no session is created
    state = await store.session_state("s")
    assert state.vetoes == () and state.mark == HistoryMark(8, "run-1")
    assert len(store) == 1


def test_build_store_gives_each_tenant_its_caps_defaulting_to_the_global_bounds():
    capped = build_store(StateConfig(max_sessions=7, tenant_max_sessions=3, tenant_max_chain_bytes=500))
    unset = build_store(StateConfig(max_sessions=7, max_chain_bytes=900))
    assert isinstance(capped, MemoryStore) and isinstance(unset, MemoryStore)
    assert (capped.sessions.tenant_limit, capped.records.tenant_limit) == (3, 500)
    assert (unset.sessions.tenant_limit, unset.records.limit, unset.records.tenant_limit) == (7, 900, 900)


def test_a_gateway_on_the_memory_backend_never_loads_redis_py():
    """redis-py (~0.15 s of imports, OpenTelemetry's metrics SDK among them) is for the Redis
    backend only: a gateway on the default memory state starts without it."""
    code = "from gateway.config import Config\nfrom gateway.server.app import build_app\nbuild_app(Config())"
    assert modules_loaded(code, "redis") == []
