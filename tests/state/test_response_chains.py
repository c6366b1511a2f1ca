"""Response chain records (``previous_response_id``) in both stores: round trips, TTLs, bounds,
and "nothing stored" instead of a failure."""

from __future__ import annotations

import time

from support.redis_server import RedisServer

from gateway.state import ChainRecord, MemoryStore
from gateway.state.redis import RedisStore

RECORD = ChainRecord(
    (
        {"role": "user", "content": "read a.txt"},
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": '{"path": "a.txt"}'},
    ),
    ({"type": "function_call_output", "call_id": "call_2", "output": "[loopguard] not run"},),
)


def record(n: int, size: int = 10) -> ChainRecord:
    return ChainRecord(({"role": "user", "content": f"{n}:" + "x" * size},))


def test_records_survive_serialization():
    assert ChainRecord.loads(RECORD.dumps()) == RECORD
    assert ChainRecord.loads(b'{"i": [1]}') == ChainRecord((1,))


async def test_memory_roundtrip_and_unknown_ids():
    store = MemoryStore()
    await store.save_response_chain("resp_1", RECORD)
    assert await store.response_chain("resp_1") == RECORD
    assert await store.response_chain("resp_2") is None
    await store.save_response_chain("resp_1", record(1))  # the same id again: replaced
    assert await store.response_chain("resp_1") == record(1)


async def test_memory_stays_within_its_byte_budget_dropping_the_oldest():
    size = len(record(0, 1000).dumps())
    store = MemoryStore(max_chain_bytes=size * 10)
    for n in range(50):
        await store.save_response_chain(f"resp_{n}", record(n, 1000))
    assert store._chains.size <= size * 10
    assert await store.response_chain("resp_0") is None
    assert await store.response_chain("resp_49") == record(49, 1000)
    await store.save_response_chain("huge", record(0, size * 20))  # larger than the budget: not kept
    assert await store.response_chain("huge") is None
    assert await store.response_chain("resp_49") == record(49, 1000)


async def test_memory_records_expire_after_ttl():
    store = MemoryStore(ttl_s=0.05)
    await store.save_response_chain("resp_1", RECORD)
    time.sleep(0.08)
    assert await store.response_chain("resp_1") is None
    assert store._chains.size == 0


def redis_store(url: str, **options) -> RedisStore:
    return RedisStore(url, **{"key_prefix": "t:", "ttl_s": 60, "op_timeout_s": 5.0, **options})


async def test_redis_roundtrip_with_prefix_and_ttl(redis_server):
    store = redis_store(redis_server.url, ttl_s=30)
    await store.save_response_chain("resp_1", RECORD)
    assert await store.response_chain("resp_1") == RECORD
    assert await store.response_chain("resp_unknown") is None
    client = redis_server.client()
    # The record, and its tenant's budget index (``rb:``: keys by age; ``rs:``: their sizes).
    assert sorted(client.keys("*")) == [b"t:r:resp_1", b"t:rb:{-}", b"t:rs:{-}"]
    assert all(0 < client.pttl(key) <= 30_000 for key in client.keys("*"))
    assert store.degradations == 0
    await store.aclose()


async def test_redis_record_seen_by_another_replica(redis_server):
    one, two = redis_store(redis_server.url), redis_store(redis_server.url)
    await one.save_response_chain("resp_1", RECORD)
    assert await two.response_chain("resp_1") == RECORD
    await one.aclose()
    await two.aclose()


async def test_redis_unreadable_record_or_no_redis_means_nothing_stored(redis_server, tmp_path):
    store = redis_store(redis_server.url, retry_after_s=0)
    redis_server.client().set("t:r:resp_bad", b"not json")
    assert await store.response_chain("resp_bad") is None
    assert store.degradations == 1
    await store.aclose()
    down = redis_store(RedisServer(tmp_path).url, retry_after_s=0)  # never started
    await down.save_response_chain("resp_1", RECORD)  # skipped, not raised
    assert await down.response_chain("resp_1") is None
    assert down.degradations == 2
    await down.aclose()
