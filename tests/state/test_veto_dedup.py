"""Parallel requests of one session that veto the same call store it once, in every store."""

import asyncio

import pytest

from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.state import MemoryStore, VetoRecord
from gateway.state.redis import RedisStore


def veto(call_id: str, args: str = '{"path": "a"}', anchor: int = 3) -> VetoRecord:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read", "arguments": args}}],
    }
    observation = {"role": "tool", "tool_call_id": call_id, "content": "[loopguard] refused"}
    return VetoRecord(anchor, "h3", (call, observation), CHAT.declared.id_fields)


async def _hundred_parallel(store) -> None:
    await asyncio.gather(*(store.add_veto("s", veto(f"call_{i}")) for i in range(100)))
    await store.add_veto("s", veto("call_x", args='{"path": "b"}'))  # another call: kept
    await store.add_veto("s", veto("call_y", anchor=5))  # the same call later on: kept


async def test_memory_store_keeps_one_copy():
    store = MemoryStore()
    await _hundred_parallel(store)
    stored = await store.vetoes("s")
    assert len(stored) == 3 and stored[0].messages[0]["tool_calls"][0]["id"] == "call_0"


@pytest.fixture
async def redis_store(redis_server):
    store = RedisStore(redis_server.url, op_timeout_s=2)
    yield store
    await store.aclose()


async def test_redis_store_keeps_one_copy(redis_store):
    await _hundred_parallel(redis_store)
    assert redis_store.degradations == 0
    assert len(await redis_store.vetoes("s")) == 3
