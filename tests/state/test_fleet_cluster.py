"""The fleet's memory on a real Redis Cluster: a tenant's fleet keys share one slot (its hash
tag), so each script runs there, and tenants spread over the primaries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.redis_cluster import RedisCluster, cluster_tools

from gateway.state import build_fleet
from gateway.state.fleet import Outcome, Rule
from gateway.state.fleet_redis import AGENTS, BY_LAST, BY_NAME, ENTRIES, STOPS, RedisFleet
from gateway.state.redis import RedisStore
from gateway.trace.fleet import StoppedLoop

pytestmark = pytest.mark.skipif(cluster_tools() is not None, reason=cluster_tools() or "")
RULE = Rule(sessions=2, window_s=600)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[RedisCluster]:
    started = RedisCluster(tmp_path_factory.mktemp("fleet-cluster")).start()
    yield started
    started.stop()


async def test_a_tenants_tool_goes_down_on_a_cluster_and_its_keys_share_a_slot(cluster):
    store = RedisStore(cluster.url, mode="cluster", key_prefix="k:", op_timeout_s=5.0, mirror_sessions=0)
    fleet = build_fleet(store)
    assert isinstance(fleet, RedisFleet)
    try:
        slots_by_tenant = {}
        for n in range(12):
            tenant = f"t:{n:024x}:"
            failed = Outcome("lookup", "crm", False, "shape", "refused")
            await fleet.observe(tenant, "s1", (failed,), (), "", 1000.0, RULE)
            report = await fleet.observe(tenant, "s2", (failed,), (), "", 1001.0, RULE)
            assert [c.kind for c in report.changes] == ["down"], tenant
            fleet.stop(tenant, "agent", StoppedLoop("cycle", "x", "h", "", "c1", 1001.0), RULE)
            keys = [fleet.key(kind, tenant) for kind in (ENTRIES, BY_LAST, BY_NAME, STOPS, AGENTS)]
            slots = {cluster.alive()[0].client().cluster("KEYSLOT", key) for key in keys}
            assert len(slots) == 1
            slots_by_tenant[tenant] = slots.pop()
        await store.flush()
        everyone, _ = await fleet.health(None, 1002.0, RULE)
        assert sorted(h.tenant for h in everyone) == sorted(slots_by_tenant)
        primaries = {cluster.primary_of(fleet.key(ENTRIES, tenant)).port for tenant in slots_by_tenant}
        assert len(primaries) > 1
        recalled = await fleet.observe("t:" + "0" * 24 + ":", "s3", (), (), "agent", 1003.0, RULE)
        assert [s.call_id for s in recalled.stopped] == ["c1"]
    finally:
        await store.aclose()
