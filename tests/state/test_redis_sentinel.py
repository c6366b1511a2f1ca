"""The shared store on a real Sentinel set (a primary, a replica, 3 sentinels), one per module.

Two stores find the primary through the sentinels and keep each other's mirror true; two gateway
replicas make the decisions one in-memory gateway makes, streamed and not; and the primary
killed mid-conversation fails no request: the sentinels promote the replica, the clients follow
(the last test: it leaves the set changed, with the killed node back as the replica).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from support.looping import RespondingUpstream
from support.redis_cluster import SENTINEL_SERVICE, SentinelSet, cluster_tools
from support.replicas import Gateways, converse, model
from support.servers import serve
from support.waiting import wait_for

from gateway.state import HistoryMark
from gateway.state.redis import RedisStore

pytestmark = pytest.mark.skipif(cluster_tools() is not None, reason=cluster_tools() or "")


@pytest.fixture(scope="module")
def sentinels(tmp_path_factory) -> Iterator[SentinelSet]:
    started = SentinelSet(tmp_path_factory.mktemp("sentinel")).start()
    yield started
    started.stop()


def reach(sentinels: SentinelSet, **more) -> dict:
    """The ``state`` keys naming the set: no node's address, only the sentinels'."""
    return {
        "mode": "sentinel",
        "url": "redis:///0",
        "sentinels": sentinels.addresses,
        "service": SENTINEL_SERVICE,
        **more,
    }


def _reach_store(sentinels: SentinelSet) -> dict:
    addresses = tuple(("127.0.0.1", node.port) for node in sentinels.sentinels)
    return {
        "url": "redis:///0",
        "mode": "sentinel",
        "sentinels": addresses,
        "service": SENTINEL_SERVICE,
        "key_prefix": "m:",
        "op_timeout_s": 5.0,
    }


def store_for(sentinels: SentinelSet) -> RedisStore:
    return RedisStore(**_reach_store(sentinels))


async def test_a_read_is_one_command_that_also_notes_the_session_in_its_tenants_index(sentinels):
    store = RedisStore(**{**_reach_store(sentinels), "mirror_sessions": 0})
    await store.session_state("warm", HistoryMark(1, "w"))  # the primary learns the script
    primary = sentinels.primary.client()
    before = primary.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    await store.session_state("s", HistoryMark(2, "a"))
    assert primary.info("commandstats")["cmdstat_evalsha"]["calls"] - before == 1
    assert primary.zscore("m:s:{-}", "s") is not None
    assert store.degradations == 0
    await store.aclose()


async def test_a_write_by_one_replica_empties_the_others_mirror(sentinels):
    one, two = store_for(sentinels), store_for(sentinels)
    for store in (one, two):
        await store.session_state("-listen-")
    for _ in range(500):
        if one.mirror.trusted and two.mirror.trusted:
            break
        await asyncio.sleep(0.01)
    await one.session_state("s", HistoryMark(1, "one"))
    assert (await one.session_state("s", HistoryMark(2, "one"))).mark == HistoryMark(1, "one")
    assert one.mirror.hits == 1
    await one.flush()
    assert (await two.session_state("s", HistoryMark(3, "two"))).mark == HistoryMark(2, "one")
    for _ in range(500):
        if one.mirror.known("s") is None:
            break
        await asyncio.sleep(0.01)
    assert (await one.session_state("s", HistoryMark(4, "one"))).mark == HistoryMark(3, "two")
    assert sentinels.primary.client().get(one.key("h", "s")) is not None  # on the primary they found
    assert one.degradations == two.degradations == 0
    await one.aclose()
    await two.aclose()


@pytest.fixture(scope="module")
def upstream() -> Iterator[RespondingUpstream]:
    responding = RespondingUpstream(model)
    with serve(responding.app) as url:
        responding.url = url
        yield responding


@pytest.fixture(scope="module")
def gateways(tmp_path_factory, upstream, sentinels) -> Iterator[Gateways]:
    started = Gateways(tmp_path_factory.mktemp("gateways"), upstream.url, reach(sentinels, retry_after_s=0.2))
    with started.stack:
        started.replicas = [started.start("redis"), started.start("redis")]
        started.single = [started.start("memory")]
        yield started


@pytest.mark.parametrize("stream", [False, True])
def test_two_replicas_through_the_sentinels_decide_as_one_process(upstream, gateways, stream):
    task = f"stubborn: summarize a.txt behind sentinels ({stream=})"
    alone = converse(gateways.single, upstream, task, stream=stream)
    shared = converse(gateways.replicas, upstream, task, stream=stream)
    assert shared == alone, gateways.degraded()
    assert alone.executions == {"read_file": 3} and alone.answer and "stopped" in alone.answer


@pytest.mark.parametrize("stream", [False, True])
def test_the_primary_killed_mid_conversation_fails_no_request(upstream, gateways, sentinels, stream):
    """Killed right after the session's first request: the requests until the sentinels promoted
    the replica are judged from what they carry (fail-open); then the clients follow the new
    primary. The killed node comes back as the replica, for the next run."""
    killed = []

    def before(n: int) -> None:
        if n == 1:
            killed.append(sentinels.primary)
            sentinels.primary.kill()

    task = f"stubborn: read a.txt while the primary fails ({stream=})"
    outcome = converse(gateways.replicas, upstream, task, stream=stream, before=before)  # raises on a failed request
    assert killed and outcome.answer and "stopped" in outcome.answer
    assert sum(outcome.executions.values()) <= 8
    sentinels.failed_over()
    for url in gateways.replicas:  # the clients found the new primary
        assert wait_for(lambda url=url: httpx.get(url + "/readyz").json()["state"]["healthy"], timeout=30)
    time.sleep(0.3)  # past retry_after_s of the failures during the failover
    marks = len(sentinels.primary.client().keys("replicas:h:*"))
    after = converse(gateways.replicas, upstream, f"stubborn: after the failover ({stream=})", stream=stream)
    assert after.executions == {"read_file": 3} and after.answer and "stopped" in after.answer
    assert len(sentinels.primary.client().keys("replicas:h:*")) == marks + 1, gateways.degraded()[
        -6:
    ]  # the new primary is used
    sentinels.rejoin(killed[0])
