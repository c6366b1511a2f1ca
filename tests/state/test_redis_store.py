"""The Redis store against a real redis-server: round trips, TTLs, bounds, and degrading
(never failing) when Redis is down, slow or restarted."""

import asyncio
import threading
import time

import pytest
from structlog.testing import capture_logs
from support.redis_server import RedisServer

from gateway.config import StateConfig
from gateway.state import EMPTY, HistoryMark, VetoRecord, build_store
from gateway.state.memory import MAX_VETOES_PER_SESSION
from gateway.state.redis import RedisStore, redacted_url


def veto(n: int) -> VetoRecord:
    return VetoRecord(n, f"h{n}", ({"role": "assistant", "content": None}, {"role": "tool", "content": str(n)}))


def store_for(url: str, **options) -> RedisStore:
    # A generous op_timeout_s unless a test is about it: a loaded CI machine must not degrade.
    return RedisStore(url, **{"key_prefix": "t:", "ttl_s": 60, "op_timeout_s": 5.0, **options})


async def test_roundtrip_in_one_session_state_call(redis_server):
    store = store_for(redis_server.url)
    assert await store.session_state("s", HistoryMark(2, "first")) is EMPTY
    await store.add_veto("s", veto(1))
    await store.add_veto("s", veto(2))
    store.mark_compacted("s", HistoryMark(2, "first"))
    await store.flush()
    state = await store.session_state("s", HistoryMark(5, "abc"))
    assert state.vetoes == (veto(1), veto(2))
    assert state.mark == HistoryMark(2, "first") and state.compacted == HistoryMark(2, "first")
    assert (await store.session_state("s")).mark == HistoryMark(5, "abc")  # swapped in
    store.mark_compacted("s", None)
    await store.flush()
    assert (await store.session_state("s")).compacted is None
    assert await store.vetoes("other") == []
    assert store.degradations == 0
    await store.aclose()


async def test_end_run_deletes_the_vetoes_off_the_request_path(redis_server):
    store = store_for(redis_server.url)
    await store.session_state("s", HistoryMark(8, "run-1"))
    await store.add_veto("s", veto(8))
    store.end_run("s")  # fire and forget
    await store.flush()
    state = await store.session_state("s")
    assert state.vetoes == () and state.mark == HistoryMark(8, "run-1")
    assert store.degradations == 0
    await store.aclose()


async def test_a_request_costs_one_command_that_reads_its_session_and_notes_it_in_its_tenants_index(redis_server):
    store = store_for(redis_server.url, mirror_sessions=0)
    await store.session_state("warm", HistoryMark(1, "w"))  # the server learns the script once
    await store.add_veto("s", veto(1))
    client = redis_server.client()
    before = client.info("commandstats")
    state = await store.session_state("s", HistoryMark(3, "x"))
    calls = {k: v["calls"] - before.get(k, {"calls": 0})["calls"] for k, v in client.info("commandstats").items()}
    # One command from the gateway: the script that reads the vetoes, swaps the mark, reads the
    # compaction marker, warned calls and judge verdict, and notes the session as its tenant's
    # most recently used (commandstats counts the commands a script runs too, by their names).
    assert calls["cmdstat_evalsha"] == 1 and "cmdstat_eval" not in calls
    assert state.vetoes == (veto(1),)
    assert client.zscore("t:s:{-}", "s") is not None  # noted in its tenant's index
    await store.aclose()


class Monitor:
    """The commands clients send a redis-server (MONITOR), those scripts run left out."""

    def __init__(self, server: RedisServer) -> None:
        self.server, self.sent, self._ready = server, [], threading.Event()
        self._stopper = server.client()
        self._stopper.ping()  # connected before the watch starts: it sends only the stop
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "Monitor":
        self._thread.start()
        assert self._ready.wait(5)
        return self

    def __exit__(self, *_) -> None:
        self._stopper.echo("monitor-stop")
        self._thread.join(5)

    def _watch(self) -> None:
        with self.server.client().monitor() as monitor:
            self._ready.set()
            for entry in monitor.listen():
                if entry["command"] == "ECHO monitor-stop":
                    return
                if entry.get("client_type") != "lua":
                    self.sent.append(entry["command"].split()[0].upper())


async def test_a_known_sessions_mark_is_written_behind_in_one_command_that_notes_it(redis_server):
    store = store_for(redis_server.url)
    await store.session_state("-listen-")  # starts the invalidation listener
    for _ in range(500):
        if store.mirror.trusted:
            break
        await asyncio.sleep(0.01)
    for n in (1, 2):  # the first reads, the second is known: the server learns both scripts
        await store.session_state("s", HistoryMark(n, "x"))
        await store.flush()
    with Monitor(redis_server) as monitor:
        assert (await store.session_state("s", HistoryMark(3, "x"))).mark == HistoryMark(2, "x")
        await store.flush()
    assert monitor.sent == ["EVALSHA"]
    client = redis_server.client()
    assert client.get("t:h:{s}") == HistoryMark(3, "x").dumps() and client.zscore("t:s:{-}", "s") is not None
    await store.aclose()


async def test_every_key_has_the_prefix_and_a_ttl(redis_server):
    store = store_for(redis_server.url, ttl_s=30)
    await store.add_veto("sess-1", veto(1))
    await store.session_state("sess-1", HistoryMark(2, "x"))
    await store.session_state("sess-2", HistoryMark(2, "y"))
    store.mark_compacted("sess-2", HistoryMark(2, "y"))
    await store.flush()
    client = redis_server.client()
    keys = sorted(k.decode() for k in client.keys("*"))
    # A session's keys carry it as their hash tag; ``t:s:{-}``: the sessions of the tenant (here:
    # clients without a credential, ``-``), by last use.
    assert keys == ["t:c:{sess-2}", "t:h:{sess-1}", "t:h:{sess-2}", "t:s:{-}", "t:v:{sess-1}"]
    for key in keys:
        assert 0 < client.pttl(key) <= 30_000
    await store.aclose()


async def test_veto_lists_are_trimmed(redis_server):
    store = store_for(redis_server.url)
    for n in range(MAX_VETOES_PER_SESSION + 5):
        await store.add_veto("s", veto(n))
    assert redis_server.client().llen("t:v:{s}") == MAX_VETOES_PER_SESSION
    assert (await store.vetoes("s"))[0] == veto(5)
    await store.aclose()


async def test_an_idle_session_expires(redis_server):
    store = store_for(redis_server.url, ttl_s=0.2)
    await store.add_veto("s", veto(1))
    await store.session_state("s", HistoryMark(1, "x"))
    store.mark_compacted("s", HistoryMark(1, "x"))
    await store.flush()
    await asyncio.sleep(0.4)
    assert await store.session_state("s") is EMPTY
    await store.aclose()


async def test_build_store_builds_the_configured_redis_store(redis_server):
    store = build_store(StateConfig(backend="redis", url=redis_server.url, key_prefix="cfg:", ttl_s=9))
    assert isinstance(store, RedisStore) and store.ttl_ms == 9000 and store.key("v", "s") == "cfg:v:{s}"
    await store.add_veto("s", veto(1))
    assert await store.vetoes("s") == [veto(1)]
    await store.aclose()


async def test_unreachable_redis_degrades_logs_without_the_password_and_counts(tmp_path):
    closed = RedisServer(tmp_path, password="hunter2-secret")  # never started: nothing listens
    store = store_for(closed.url, retry_after_s=0)
    with capture_logs() as logs:
        assert await store.session_state("s") is EMPTY
        await store.add_veto("s", veto(1))  # a write is skipped, not raised
        store.mark_compacted("s", HistoryMark(1, "x"))
        await store.flush()
    assert store.degradations == 3
    degraded = [e for e in logs if e["event"] == "state_degraded"]
    assert [e["op"] for e in degraded] == ["session_state", "add_veto", "mark_compacted"]
    assert all(e["log_level"] == "warning" and e["error"] for e in degraded)
    assert "hunter2-secret" not in repr(logs)
    assert degraded[0]["redis"] == f"redis://:***@127.0.0.1:{closed.port}/0"
    await store.aclose()


async def test_after_a_failure_redis_is_left_alone_for_retry_after_s(tmp_path):
    store = store_for(RedisServer(tmp_path).url, retry_after_s=60)
    with capture_logs() as logs:
        for _ in range(5):
            assert await store.session_state("s") is EMPTY
    assert store.degradations == 5
    assert len([e for e in logs if e["event"] == "state_degraded"]) == 1  # one attempt, one line
    await store.aclose()


async def test_a_hung_redis_costs_at_most_op_timeout_s(redis_server):
    store = store_for(redis_server.url, op_timeout_s=0.05, retry_after_s=0)
    await store.add_veto("s", veto(1))  # a pooled connection exists before Redis hangs
    redis_server.pause()
    try:
        for _ in range(3):
            started = time.perf_counter()
            assert await store.session_state("s") is EMPTY
            assert time.perf_counter() - started < 1.0  # Redis never answers: the budget ends it
            await store.add_veto("s", veto(2))  # skipped, not raised
    finally:
        redis_server.resume()
    assert store.degradations == 6
    # Answered again once Redis is back (a timed-out write may still have landed: best effort).
    assert (await store.vetoes("s"))[0] == veto(1)
    await store.aclose()


async def test_a_restarted_redis_is_used_again(redis_server):
    store = store_for(redis_server.url, retry_after_s=0.1)
    await store.add_veto("s", veto(1))
    redis_server.stop()
    assert await store.session_state("s") is EMPTY
    assert store.degradations == 1
    redis_server.start()  # same port, empty data
    await asyncio.sleep(0.15)
    with capture_logs() as logs:
        await store.add_veto("s", veto(2))
        assert await store.vetoes("s") == [veto(2)]
    assert store.degradations == 1
    assert [e["event"] for e in logs] == ["state_recovered"]
    await store.aclose()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:pw@host:6380/1", "redis://:***@host:6380/1"),
        ("redis://user:pw@host/0", "redis://user:***@host/0"),
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("unix:///run/redis.sock", "unix:///run/redis.sock"),
    ],
)
def test_redacted_url(url, shown):
    assert redacted_url(url) == shown
