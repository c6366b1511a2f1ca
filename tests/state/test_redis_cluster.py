"""The shared store on a real Redis Cluster (3 primaries, 3 replicas), one per module.

Every key of one session lands in one slot, sessions spread over every primary, each tenant's
budget keys share one slot and its budget holds; a write by one replica empties the other's
mirror whichever primary holds the session; two gateway replicas make the decisions one
in-memory gateway makes, streamed and not; and a primary killed mid-conversation fails no
request and the loop still ends (the last test: it leaves the cluster changed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from support.looping import RespondingUpstream
from support.redis_cluster import RedisCluster, cluster_tools
from support.replicas import Gateways, converse, model
from support.servers import serve
from support.waiting import wait_for

from gateway.state import ChainRecord, HistoryMark, VetoRecord
from gateway.state.claims import key as claim_key
from gateway.state.redis import RedisStore
from gateway.trace.model import JudgeVerdict, WarnedCall

pytestmark = pytest.mark.skipif(cluster_tools() is not None, reason=cluster_tools() or "")
TENANT = "t:cccccccccccccccccccccccc:"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[RedisCluster]:
    started = RedisCluster(tmp_path_factory.mktemp("cluster")).start()
    yield started
    started.stop()


def store_for(cluster: RedisCluster, **options) -> RedisStore:
    return RedisStore(cluster.url, **{"mode": "cluster", "key_prefix": "k:", "op_timeout_s": 5.0, **options})


def slot(cluster: RedisCluster, key: str) -> int:
    return cluster.alive()[0].client().cluster("KEYSLOT", key)


def sessions_on_every_primary(cluster: RedisCluster, store: RedisStore) -> dict[int, str]:
    """A session whose keys a primary holds, for each primary (by port)."""
    found: dict[int, str] = {}
    for n in range(200):
        session = f"{TENANT}h:spread-{n}"
        found.setdefault(cluster.primary_of(store.key("h", session)).port, session)
        if len(found) == len(cluster.primaries()):
            return found
    raise AssertionError("sessions did not spread over every primary")


async def test_a_sessions_keys_share_one_slot_and_sessions_spread_over_every_primary(cluster):
    store = store_for(cluster, mirror_sessions=0)
    session = f"{TENANT}h:one-slot"
    await store.add_veto(session, VetoRecord(1, "x", ({"role": "tool", "content": "refused"},)))
    await store.session_state(session, HistoryMark(2, "a"))
    store.mark_compacted(session, HistoryMark(2, "a"))
    store.add_warned(session, WarnedCall("call_3", "repeat"))
    store.save_verdict(session, JudgeVerdict("call_3", True, 0.9, "same read", 1, 4))
    await store.save_response_chain(TENANT + "resp_1", ChainRecord(({"role": "user", "content": "x"},)))
    await store.flush()
    keys = store._keys_of(session)
    assert all(cluster.primary_of(key).client().exists(key) for key in keys)
    assert len({slot(cluster, key) for key in keys}) == 1
    budget = [f"k:rb:{{{TENANT}}}", f"k:rs:{{{TENANT}}}"]
    assert len({slot(cluster, key) for key in budget}) == 1
    assert all(cluster.primary_of(key).client().exists(key) for key in [*budget, f"k:s:{{{TENANT}}}"])
    assert len(sessions_on_every_primary(cluster, store)) == 3
    assert store.degradations == 0
    await store.aclose()


async def test_a_tenants_budget_holds_across_the_cluster(cluster):
    store = store_for(cluster, key_prefix="b:", mirror_sessions=0, tenant_max_sessions=5)
    for n in range(20):
        await store.session_state(f"{TENANT}h:{n}", HistoryMark(1, "b"))
    for n in range(12):
        await store.save_claim(claim_key(TENANT, "response", str(n)))
    assert store.evictions == 15
    kept = [n for n in range(20) if cluster.primary_of(k := store.key("h", f"{TENANT}h:{n}")).client().exists(k)]
    assert kept == [15, 16, 17, 18, 19]
    assert await store.claimed(claim_key(TENANT, "response", "11"))
    assert store.degradations == 0
    await store.aclose()


def scripts_run(cluster: RedisCluster) -> int:
    return sum(
        node.client().info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0) for node in cluster.alive()
    )


async def test_a_read_costs_its_script_and_the_note_in_its_tenants_index_beside_it(cluster):
    """The tenant's index lives in another slot than the session's keys, so no script can do
    both: the read and the note are two commands, sent together."""
    store = store_for(cluster, key_prefix="one:", mirror_sessions=0)
    await store.session_state(f"{TENANT}h:warm", HistoryMark(1, "w"))  # every node learns the scripts
    session, index = f"{TENANT}h:read", f"one:s:{{{TENANT}}}"
    before = scripts_run(cluster)
    await store.session_state(session, HistoryMark(2, "a"))
    assert scripts_run(cluster) - before == 2
    assert cluster.primary_of(index).client().zscore(index, session) is not None
    assert store.degradations == 0
    await store.aclose()


async def test_more_requests_at_once_than_connections_wait_for_one_instead_of_failing(cluster):
    """The cluster client refuses a command when a node's connections are all busy: the store
    lets only as many operations run as it has connections, the others wait their turn."""
    store = store_for(cluster, key_prefix="busy:", max_connections=4, mirror_sessions=0, op_timeout_s=60.0)
    states = await asyncio.gather(*(store.session_state(f"{TENANT}h:{n}", HistoryMark(1, "x")) for n in range(2000)))
    assert len(states) == 2000 and store.degradations == 0
    await store.aclose()


async def listening(*stores: RedisStore) -> None:
    for store in stores:
        await store.session_state("-listen-")  # starts the listener
    for _ in range(500):
        if all(store.mirror.trusted for store in stores):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the invalidation listeners did not subscribe on every primary")


async def test_a_write_by_one_replica_empties_the_others_mirror_on_every_primary(cluster):
    one, two = store_for(cluster, key_prefix="m:"), store_for(cluster, key_prefix="m:")
    await listening(one, two)
    sessions = sessions_on_every_primary(cluster, one)
    for session in sessions.values():
        await one.session_state(session, HistoryMark(1, "one"))
        await one.session_state(session, HistoryMark(2, "one"))  # the mirror answers
    hits = one.mirror.hits
    assert hits == len(sessions)
    for session in sessions.values():
        await two.session_state(session, HistoryMark(3, "two"))
    for _ in range(500):  # invalidations arrive (loopback: well under a second)
        if not any(one.mirror.known(session) for session in sessions.values()):
            break
        await asyncio.sleep(0.01)
    for port, session in sessions.items():
        assert (await one.session_state(session, HistoryMark(4, "one"))).mark == HistoryMark(3, "two"), port
    assert one.degradations == two.degradations == 0
    await one.aclose()
    await two.aclose()


async def test_the_mirror_follows_a_failover_to_the_promoted_replica(cluster):
    """A primary killed: the mirror stops trusting what it knew, the listeners subscribe on the
    promoted replica, and a write there by another replica empties the mirror again. The killed
    node comes back as a replica afterwards."""
    one, two = (store_for(cluster, key_prefix="f:", retry_after_s=0.05) for _ in range(2))
    await listening(one, two)
    port, session = next(iter(sessions_on_every_primary(cluster, one).items()))
    victim = next(node for node in cluster.primaries() if node.port == port)
    await one.session_state(session, HistoryMark(1, "one"))
    assert one.mirror.known(session) is not None
    try:
        await asyncio.to_thread(cluster.kill_primary, victim)
        assert one.mirror.known(session) is None  # nothing is trusted across the failover
        await listening(one, two)  # subscribed again, on the promoted replica too
        for n in range(2, 500):  # until the clients found the new primary (requests fail open meanwhile)
            await one.session_state(session, HistoryMark(n, "one"))
            if one.mirror.known(session) is not None:
                break
            await asyncio.sleep(0.01)
        assert one.mirror.known(session) is not None and cluster.primary_of(one.key("h", session)).port != port
        written = HistoryMark(1000, "two")
        for _ in range(500):  # another replica writes, once its client found the new primary too
            failed = two.degradations
            await two.session_state(session, written)
            if two.degradations == failed:
                break
            await asyncio.sleep(0.01)
        for _ in range(500):
            if one.mirror.known(session) is None:
                break
            await asyncio.sleep(0.01)
        assert (await one.session_state(session, HistoryMark(1001, "one"))).mark == written
    finally:
        await one.aclose()
        await two.aclose()
        victim.start()  # rejoins as the promoted replica's replica
        await asyncio.to_thread(cluster.wait_ok)


# --- two gateway replicas over the cluster ----------------------------------------------------


@pytest.fixture(scope="module")
def upstream() -> Iterator[RespondingUpstream]:
    responding = RespondingUpstream(model)
    with serve(responding.app) as url:
        responding.url = url
        yield responding


@pytest.fixture(scope="module")
def gateways(tmp_path_factory, upstream, cluster) -> Iterator[Gateways]:
    """Gateways keeping their keys under ``replicas:``, and replicas under ``failover:``."""
    reach = {"mode": "cluster", "url": cluster.url, "retry_after_s": 0.2}
    started = Gateways(tmp_path_factory.mktemp("gateways"), upstream.url, reach)
    failing = Gateways(tmp_path_factory.mktemp("failover"), upstream.url, {**reach, "key_prefix": "failover:"})
    with started.stack, failing.stack:
        started.replicas = [started.start("redis"), started.start("redis")]
        started.single = [started.start("memory")]
        started.failing = failing
        failing.replicas = [failing.start("redis"), failing.start("redis")]
        yield started


@pytest.mark.parametrize("stream", [False, True])
def test_two_replicas_over_the_cluster_decide_as_one_process(upstream, gateways, stream):
    task = f"stubborn: summarize a.txt on a cluster ({stream=})"
    alone = converse(gateways.single, upstream, task, stream=stream)
    shared = converse(gateways.replicas, upstream, task, stream=stream)
    assert shared == alone, gateways.degraded()
    assert alone.executions == {"read_file": 3} and alone.answer and "stopped" in alone.answer


@pytest.mark.parametrize("stream", [False, True])
def test_a_primary_killed_mid_conversation_fails_no_request(upstream, gateways, cluster, stream):
    """The primary holding the session is killed right after its first request: the requests
    during the failover are judged from what they carry (fail-open), and once the replica took
    over, Redis is used again. The killed node comes back as a replica, for the next run."""
    failing, killed = gateways.failing, []

    def before(n: int) -> None:
        if n == 1:  # the session's keys are the only ones under the prefix
            holder = next(node for node in cluster.primaries() if node.client().keys("failover:h:*"))
            holder.kill()
            killed.append(holder)

    task = f"stubborn: read a.txt while a primary fails ({stream=})"
    outcome = converse(failing.replicas, upstream, task, stream=stream, before=before)  # raises on a failed request
    assert killed and outcome.answer and "stopped" in outcome.answer
    assert sum(outcome.executions.values()) <= 8
    assert failing.degraded()  # requests were served while the slot had no primary
    cluster.wait_ok()
    for url in failing.replicas:  # the clients found the new primary
        assert wait_for(lambda url=url: httpx.get(url + "/readyz").json()["state"]["healthy"], timeout=30)
    time.sleep(0.3)  # past retry_after_s of the failures during the failover
    marks = sum(len(node.client().keys("failover:h:*")) for node in cluster.primaries())
    after = converse(failing.replicas, upstream, f"stubborn: after the failover ({stream=})", stream=stream)
    assert after.executions == {"read_file": 3} and after.answer and "stopped" in after.answer
    assert sum(len(node.client().keys("failover:h:*")) for node in cluster.primaries()) == marks + 1  # used again
    killed[0].start()  # rejoins as the new primary's replica
    cluster.wait_ok()
    for node in cluster.primaries():  # the next run finds only its own session
        for key in node.client().keys("failover:*"):
            node.client().delete(key)
