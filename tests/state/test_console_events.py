"""The console's recent-events log in both stores: newest first, bounded in count and bytes,
details fetched by reference, and on Redis shared by every store (replica) that reads it."""

import pytest
from support.redis_server import RedisServer

from gateway.state.memory import MemoryStore
from gateway.state.redis import RedisStore


async def test_memory_keeps_the_newest_within_count_and_bytes():
    store = MemoryStore(max_event_bytes=10_000)
    for n in range(30):
        await store.add_event(f'{{"n":{n}}}'.encode(), b"x" * 100 if n % 2 else None, keep=20)
    kept = await store.recent_events(100)
    assert [e.entry for e in kept] == [f'{{"n":{n}}}'.encode() for n in range(29, 9, -1)]
    assert kept[0].detail is not None and kept[1].detail is None
    assert await store.event_detail(kept[0].detail) == b"x" * 100
    for _ in range(200):  # large details: the byte bound drops the oldest first
        await store.add_event(b"{}", b"y" * 1000, keep=1000)
    assert store._events.size <= 10_000 and len(await store.recent_events(1000)) < 20


async def test_memory_ids_increase_so_the_feed_can_tell_nothing_changed():
    store = MemoryStore()
    await store.add_event(b"a")
    first = (await store.recent_events(1))[0].id
    await store.add_event(b"b")
    assert (await store.recent_events(1))[0].id != first


@pytest.fixture
def redis_url(tmp_path):
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


async def test_redis_streams_are_trimmed_and_shared_by_replicas(redis_url):
    one = RedisStore(redis_url.url, key_prefix="c:", op_timeout_s=5.0)
    two = RedisStore(redis_url.url, key_prefix="c:", op_timeout_s=5.0)
    try:
        for n in range(15):
            await one.add_event(f"e{n}".encode(), f"d{n}".encode() if n != 14 else None, keep=10)
        seen = await two.recent_events(100)
        assert [e.entry for e in seen] == [f"e{n}".encode() for n in range(14, 4, -1)]
        assert seen[0].detail is None and seen[1].detail is not None
        assert await two.event_detail(seen[1].detail) == b"d13"
        client = redis_url.client()
        assert client.xlen("c:ui:{events}:feed") == 10 and client.xlen("c:ui:{events}:detail") <= 10
        assert await two.event_detail("0-1") is None  # trimmed away, or never there
    finally:
        await one.aclose()
        await two.aclose()


async def test_redis_down_answers_nothing_kept_without_marking_traffic_degraded(tmp_path):
    server = RedisServer(tmp_path).start()
    store = RedisStore(server.url, key_prefix="c:", op_timeout_s=5.0)
    server.stop()
    try:
        await store.add_event(b"lost")
        assert await store.recent_events(10) == []
        assert await store.event_detail("1-0") is None
        assert store.degradations == 0  # the console's reads and writes are not the traffic's
    finally:
        await store.aclose()


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_cursor_read_answers_only_the_entries_after_it(tmp_path, backend):
    server = RedisServer(tmp_path).start() if backend == "redis" else None
    store = RedisStore(server.url, key_prefix="c:", op_timeout_s=5.0) if server else MemoryStore()
    try:
        for n in range(5):
            await store.add_event(f"e{n}".encode(), keep=100)
        cursor = (await store.recent_events(100))[0].id
        assert await store.recent_events(100, after=cursor) == []
        for n in range(5, 8):
            await store.add_event(f"e{n}".encode(), keep=100)
        new = await store.recent_events(100, after=cursor)
        assert [e.entry for e in new] == [b"e7", b"e6", b"e5"]  # newest first, the cursor's own excluded
        assert [e.entry for e in await store.recent_events(2, after=cursor)] == [b"e7", b"e6"]
        assert len(await store.recent_events(100, after="not-an-id")) == 8  # unknown: from the start
    finally:
        await store.aclose()
        if server is not None:
            server.stop()
