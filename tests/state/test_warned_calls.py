"""The calls a warning named, remembered per session in both stores: read in the request's one
round trip, bounded, deduplicated, forgotten with the run's vetoes."""

from __future__ import annotations

import pytest

from gateway.state import HistoryMark, MemoryStore
from gateway.state.base import MAX_WARNED_PER_SESSION
from gateway.state.redis import RedisStore
from gateway.trace.model import WarnedCall


@pytest.fixture(params=["memory", "redis"])
async def store(request):
    if request.param == "memory":
        yield MemoryStore()
        return
    server = request.getfixturevalue("redis_server")
    redis = RedisStore(server.url, key_prefix="w:", ttl_s=60, op_timeout_s=5.0)
    yield redis
    await redis.aclose()


async def settle(store) -> None:
    if isinstance(store, RedisStore):
        await store.flush()  # add_warned is fire-and-forget


async def test_warned_calls_come_back_with_the_session_state(store):
    await store.session_state("s", HistoryMark(3, "a"))
    store.add_warned("s", WarnedCall("call_3", "similar_repeat"))
    store.add_warned("s", WarnedCall("call_5", "ignored_warning"))
    store.add_warned("s", WarnedCall("call_3", "similar_repeat"))  # a parallel request's copy
    await settle(store)
    state = await store.session_state("s", HistoryMark(6, "b"))
    assert state.warned == (WarnedCall("call_3", "similar_repeat"), WarnedCall("call_5", "ignored_warning"))
    assert (await store.session_state("other")).warned == ()
    assert store.degradations == 0


async def test_warned_calls_are_bounded_to_the_newest(store):
    for n in range(MAX_WARNED_PER_SESSION + 4):  # one per request: each lands before the next
        store.add_warned("s", WarnedCall(f"call_{n}", "no_progress"))
        await settle(store)
    warned = (await store.session_state("s")).warned
    assert len(warned) == MAX_WARNED_PER_SESSION
    assert warned[0] == WarnedCall("call_4", "no_progress")


async def test_end_run_forgets_the_warned_calls(store):
    await store.session_state("s", HistoryMark(3, "a"))
    store.add_warned("s", WarnedCall("call_3", "error_repeat"))
    await settle(store)
    store.end_run("s")
    await settle(store)
    state = await store.session_state("s")
    assert state.warned == () and state.mark == HistoryMark(3, "a")
