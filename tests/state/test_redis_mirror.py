"""Two stores on one real redis-server, as two replicas: what one writes, the other's mirror
never hides; a session a process knows costs it no read."""

import asyncio

from gateway.state import HistoryMark, VetoRecord
from gateway.state.redis import RedisStore


def store_for(url: str, **options) -> RedisStore:
    return RedisStore(url, **{"key_prefix": "m:", "ttl_s": 60, "op_timeout_s": 5.0, **options})


async def listening(*stores: RedisStore) -> None:
    for store in stores:
        await store.session_state("-listen-")  # starts the listener
    for _ in range(500):
        if all(store.mirror.trusted for store in stores):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the invalidation listener did not subscribe")


async def settled(*stores: RedisStore) -> None:
    """Writes behind landed and their invalidations arrived (loopback: well under 50 ms)."""
    for store in stores:
        await store.flush()
    await asyncio.sleep(0.05)


def mark(n: int) -> HistoryMark:
    return HistoryMark(n, f"d{n}")


def reads(redis_server) -> int:
    stats = redis_server.client().info("commandstats")
    return stats.get("cmdstat_evalsha", {}).get("calls", 0)


async def test_a_known_session_costs_no_read_and_its_mark_is_written_behind(redis_server):
    store = store_for(redis_server.url)
    await listening(store)
    assert (await store.session_state("s", mark(1))).mark is None
    await settled(store)
    before = reads(redis_server)
    for n in range(2, 6):
        assert (await store.session_state("s", mark(n))).mark == mark(n - 1)
    await settled(store)
    assert store.mirror.hits == 4
    assert reads(redis_server) - before <= 4  # only the coalesced writes behind, no read
    assert redis_server.client().get("m:h:{s}") == mark(5).dumps()
    assert 0 < redis_server.client().pttl("m:h:{s}") <= 60_000
    await store.aclose()


async def test_replicas_taking_turns_each_see_the_other_s_marks(redis_server):
    one, two = store_for(redis_server.url), store_for(redis_server.url)
    await listening(one, two)
    seen = []
    for n, replica in enumerate([one, one, two, one, one, two, two, one], start=1):
        seen.append((await replica.session_state("s", mark(n))).mark)
        await settled(one, two)
    assert seen == [None] + [mark(n) for n in range(1, 8)]
    assert one.mirror.hits >= 2  # its own consecutive requests were answered from the mirror
    await one.aclose()
    await two.aclose()


async def test_a_veto_stored_by_one_replica_reaches_the_other_s_next_request(redis_server):
    one, two = store_for(redis_server.url), store_for(redis_server.url)
    await listening(one, two)
    await one.session_state("s", mark(1))
    await settled(one, two)
    await one.session_state("s", mark(2))  # known to one now
    record = VetoRecord(2, "d2", ({"role": "assistant", "content": None}, {"role": "tool", "content": "no"}))
    await two.add_veto("s", record)
    two.mark_compacted("s", mark(2))
    await settled(one, two)
    state = await one.session_state("s", mark(3))
    assert state.vetoes == (record,) and state.compacted == mark(2) and state.mark == mark(2)
    await one.aclose()
    await two.aclose()


async def test_a_flushed_or_restarted_redis_empties_the_mirror(redis_server):
    store = store_for(redis_server.url, retry_after_s=0.05)
    await listening(store)
    await store.session_state("s", mark(1))
    await settled(store)
    redis_server.client().flushdb()
    await settled(store)
    assert (await store.session_state("s", mark(2))).mark is None  # not the mirror's mark(1)
    redis_server.stop()
    redis_server.start()
    await settled(store)
    assert (await store.session_state("s", mark(3))).mark is None
    await listening(store)
    await store.aclose()


async def test_without_the_mirror_every_request_reads(redis_server):
    store = store_for(redis_server.url, mirror_sessions=0)
    await store.session_state("s", mark(1))
    before = reads(redis_server)
    assert (await store.session_state("s", mark(2))).mark == mark(1)
    assert reads(redis_server) - before == 1  # one script: the read and the note in the tenant's index
    await store.aclose()
