"""Operators' run labels in both stores: a label set again replaces the earlier one, a runaway
writer is refused past the bound (never an older label dropped), and on Redis every replica
reads the same labels; a Redis that is down answers "none kept"."""

from __future__ import annotations

from gateway.state.events import RunLabels
from gateway.state.memory import MemoryStore
from gateway.state.redis import RedisStore


async def test_memory_keeps_the_latest_label_of_each_run():
    store = MemoryStore()
    await store.save_label("s-1#1", b'{"label": "healthy"}')
    await store.save_label("s-2#1", b'{"label": "loop"}')
    await store.save_label("s-1#1", b'{"label": "loop"}')
    assert await store.labels() == {"s-1#1": b'{"label": "loop"}', "s-2#1": b'{"label": "loop"}'}


def test_past_the_bound_a_new_run_is_refused_and_the_old_stay():
    labels = RunLabels(limit=2)
    assert labels.save("a", b"1") and labels.save("b", b"2")
    assert not labels.save("c", b"3")
    assert labels.save("a", b"4")  # relabelling a kept run is no new one
    assert labels.all() == {"a": b"4", "b": b"2"}


async def test_redis_labels_are_every_replicas(redis_server):
    one = RedisStore(redis_server.url, key_prefix="l:", op_timeout_s=5.0)
    two = RedisStore(redis_server.url, key_prefix="l:", op_timeout_s=5.0)
    try:
        await one.save_label("s-1#1", b'{"label": "loop"}')
        await two.save_label("s-1#2", b'{"label": "healthy"}')
        assert (
            await one.labels()
            == await two.labels()
            == {"s-1#1": b'{"label": "loop"}', "s-1#2": b'{"label": "healthy"}'}
        )
        assert redis_server.client().hlen("l:ui:labels") == 2
    finally:
        await one.aclose()
        await two.aclose()


async def test_redis_down_answers_none_kept(redis_server):
    store = RedisStore(redis_server.url, key_prefix="l:", op_timeout_s=1.0)
    redis_server.stop()
    try:
        await store.save_label("s#1", b"{}")  # best effort: no exception
        assert await store.labels() == {}
    finally:
        await store.aclose()
