"""The fleet's memory (gateway/state/fleet*.py) on both backends, the same rules: a remote tool
is down once N sessions of a tenant saw one failure within the window, until a success anywhere
in the tenant or the window's silence; each change is answered once; each tenant is bounded on
its own. The Redis backend runs on a real redis-server (and a real Redis Cluster, below)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.state import build_fleet
from gateway.state.fleet import FleetStore, Outcome, Rule
from gateway.state.fleet_memory import MemoryFleet
from gateway.state.redis import RedisStore
from gateway.trace.fleet import StoppedLoop

RULE = Rule(sessions=3, window_s=600, tenant_max_tools=8, recall_s=900, tenant_max_agents=4)
T1, T2 = "t:aaaaaaaaaaaaaaaaaaaaaaaa:", "t:bbbbbbbbbbbbbbbbbbbbbbbb:"
FAIL = Outcome("lookup_customer", "crm", ok=False, shape="s1", sample="MCP error -#: crm backend unavailable")
OK = Outcome("lookup_customer", "crm", ok=True)
NOW = 1_800_000_000.0


@pytest.fixture(params=["memory", "redis"])
async def fleet(request, tmp_path) -> AsyncIterator[FleetStore]:
    if request.param == "memory":
        yield MemoryFleet()
        return
    server = request.getfixturevalue("redis_server")
    store = RedisStore(server.url, key_prefix="fl:", op_timeout_s=5.0, mirror_sessions=0)
    try:
        yield build_fleet(store)
    finally:
        await store.aclose()


async def fail(fleet: FleetStore, session: str, at: float, tenant: str = T1, outcome: Outcome = FAIL):
    return await fleet.observe(tenant, session, (outcome,), (), "", at, RULE)


async def test_down_at_the_nth_session_once_and_only_for_its_tenant(fleet):
    first = await fail(fleet, "s1", NOW)
    again = await fail(fleet, "s1", NOW + 1)  # the same session again: still one session
    second = await fail(fleet, "s2", NOW + 2)
    assert first.down == again.down == second.down == () and not (first.changes or second.changes)
    third = await fail(fleet, "s3", NOW + 3)
    assert [(c.kind, c.reason) for c in third.changes] == [("down", "sessions")]
    (down,) = third.down
    assert (down.tool, down.endpoint, down.sessions, down.calls) == ("lookup_customer", "crm", 3, 4)
    assert down.first == NOW and down.last == NOW + 3 and down.down_since == NOW + 3
    assert down.sample == FAIL.sample
    fourth = await fail(fleet, "s4", NOW + 4)
    assert fourth.changes == () and fourth.down[0].sessions == 4  # the change was answered once
    other = await fail(fleet, "s9", NOW + 5, tenant=T2)
    assert other.down == () and other.changes == ()  # another tenant's failures never count
    watched = await fleet.observe(T1, "s5", (), (("lookup_customer", "crm"),), "", NOW + 6, RULE)
    assert [d.sessions for d in watched.down] == [4]
    assert (await fleet.observe(T2, "s5", (), (("lookup_customer", "crm"),), "", NOW + 6, RULE)).down == ()


async def test_other_shapes_and_endpoints_are_other_entries(fleet):
    for n, shape in enumerate(("a", "b", "c")):
        await fail(fleet, f"s{n}", NOW + n, outcome=Outcome("lookup_customer", "crm", False, shape, "x"))
    for n, endpoint in enumerate(("h1", "h2", "h3")):
        await fail(fleet, f"s{n}", NOW + n, outcome=Outcome("lookup_customer", endpoint, False, "a", "x"))
    found, _ = await fleet.health(T1, NOW + 5, RULE)
    assert found == []


async def test_a_success_anywhere_lifts_it(fleet):
    for n in range(3):
        await fail(fleet, f"s{n}", NOW + n)
    lifted = await fleet.observe(T2, "x", (OK,), (), "", NOW + 4, RULE)
    assert lifted.changes == ()  # another tenant's success is not this tenant's
    lifted = await fleet.observe(T1, "s7", (OK,), (), "", NOW + 5, RULE)
    assert [(c.kind, c.reason) for c in lifted.changes] == [("recovered", "success")] and lifted.down == ()
    assert (await fleet.health(T1, NOW + 6, RULE))[0] == []
    after = await fail(fleet, "s1", NOW + 7)  # failing again starts from one session
    assert after.down == () and after.changes == ()


async def test_silence_for_the_window_lifts_it(fleet):
    for n in range(3):
        await fail(fleet, f"s{n}", NOW + n)
    found, changes = await fleet.health(T1, NOW + 100, RULE)
    assert [h.sessions for h in found] == [3] and changes == []
    everyone, _ = await fleet.health(None, NOW + 100, RULE)
    assert [(h.tenant, h.tool) for h in everyone] == [(T1, "lookup_customer")]
    found, changes = await fleet.health(T1, NOW + 2 + RULE.window_s + 1, RULE)
    assert found == [] and [(c.kind, c.reason) for c in changes] == [("recovered", "silence")]


async def test_a_session_seen_long_ago_no_longer_counts(fleet):
    await fail(fleet, "s1", NOW)
    await fail(fleet, "s2", NOW + RULE.window_s - 10)
    late = await fail(fleet, "s3", NOW + RULE.window_s + 5)  # s1 is out of the window
    assert late.down == () and late.changes == ()


async def test_a_flood_of_tool_names_evicts_only_its_own_tenants_entries(fleet):
    for n in range(3):
        await fail(fleet, f"s{n}", NOW + n, tenant=T2)
    for n in range(40):
        flood = Outcome(f"tool_{n}", "", False, "z", "boom")
        await fail(fleet, "f", NOW + 10 + n, outcome=flood)
    assert fleet.evictions >= 40 - RULE.tenant_max_tools
    found, _ = await fleet.health(T2, NOW + 60, RULE)
    assert [h.tool for h in found] == ["lookup_customer"]  # the other tenant's entry is intact


async def test_stopped_loops_are_recalled_per_agent_within_the_window(fleet):
    loop = StoppedLoop("exact_repeat", "search", "h1", "", "call_9", NOW)
    fleet.stop(T1, "agent-a", loop, RULE)
    await _settled(fleet)
    found = await fleet.observe(T1, "s2", (), (), "agent-a", NOW + 60, RULE)
    assert found.stopped == (loop,)
    assert (await fleet.observe(T1, "s2", (), (), "agent-b", NOW + 60, RULE)).stopped == ()
    assert (await fleet.observe(T2, "s2", (), (), "agent-a", NOW + 60, RULE)).stopped == ()
    assert (await fleet.observe(T1, "s2", (), (), "agent-a", NOW + RULE.recall_s + 1, RULE)).stopped == ()
    for n in range(10):  # more agents than the tenant's cap: the oldest are forgotten
        fleet.stop(T1, f"other-{n}", StoppedLoop("cycle", "x", "h", "", f"c{n}", NOW + n), RULE)
    await _settled(fleet)
    assert (await fleet.observe(T1, "s2", (), (), "agent-a", NOW + 60, RULE)).stopped == ()
    assert (await fleet.observe(T1, "s2", (), (), "other-9", NOW + 60, RULE)).stopped != ()


async def _settled(fleet: FleetStore) -> None:
    """The fire-and-forget writes landed (Redis runs them as tasks)."""
    import asyncio

    for _ in range(50):
        await asyncio.sleep(0.01)
