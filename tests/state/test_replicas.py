"""Several gateway processes sharing one real redis-server, as replicas behind a load balancer.

A looping conversation whose requests alternate between two gateway processes gets exactly the
decisions a single process makes; a gateway restarted mid-conversation loses no vetoed
exchange; with Redis stopped, requests keep succeeding (degraded, logged, counted) and a
restarted Redis is used again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import ExitStack

import pytest
from structlog.testing import capture_logs
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.redis_server import RedisServer
from support.replicas import MARK, Gateways, Outcome, anchors, converse, model, observations
from support.servers import serve

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app

# --- module fixtures: one upstream, one redis-server, two redis replicas, one memory gateway ----


@pytest.fixture(scope="module")
def upstream() -> Iterator[RespondingUpstream]:
    responding = RespondingUpstream(model)
    with serve(responding.app) as url:
        responding.url = url
        yield responding


@pytest.fixture(scope="module")
def shared_redis(tmp_path_factory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gateways(tmp_path_factory, upstream, shared_redis) -> Iterator[Gateways]:
    started = Gateways(tmp_path_factory.mktemp("gateways"), upstream.url, shared_redis.url)
    with started.stack:
        yield started


@pytest.fixture(scope="module")
def replicas(gateways) -> list[str]:
    return [gateways.start("redis"), gateways.start("redis")]


@pytest.fixture(scope="module")
def single(gateways) -> list[str]:
    return [gateways.start("memory")]


# --- the same decisions whichever replica serves a request ------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_loop_alternating_between_two_replicas_gets_the_decisions_of_one_process(
    upstream, gateways, replicas, single, stream
):
    task = f"stubborn: summarize a.txt ({stream=})"  # its own session, in both runs
    alone = converse(single, upstream, task, stream=stream)
    shared = converse(replicas, upstream, task, stream=stream)
    assert shared == alone, gateways.degraded()
    # ... and those decisions are the whole ladder: warn, veto, terminate.
    assert anchors(alone.seen[3]) and observations(alone.seen[4])
    assert alone.executions == {"read_file": 3}
    assert alone.answer and "stopped" in alone.answer
    if not stream:
        assert alone.actions == ["pass", "pass", "pass", "terminate"]


def test_a_vetoed_exchange_is_shown_by_the_replica_that_did_not_veto_it(upstream, gateways, replicas, single):
    task = "look around the folder"
    alone = converse(single, upstream, task)
    shared = converse(replicas, upstream, task)
    assert shared == alone, gateways.degraded()
    assert alone.answer == "done: listed the folder"
    assert alone.executions == {"read_file": 3, "list_dir": 1}
    # Request 4 (replica 2) vetoed the 4th read_file; request 5 went to replica 1, which showed
    # the model its refused call again, before the list_dir it did instead.
    last = shared.seen[-1]
    vetoed_at = next(i for i, m in enumerate(last) if str(m.get("content", "")).startswith(MARK))
    assert last[vetoed_at - 1]["tool_calls"][0]["function"]["name"] == "read_file"
    assert last[vetoed_at + 1]["tool_calls"][0]["function"]["name"] == "list_dir"


def test_a_loop_surviving_compaction_is_caught_across_replicas(upstream, gateways, replicas, single):
    task = "stubborn: read a.txt, compact, read again"
    alone = converse(single, upstream, task, compact_after=2)
    shared = converse(replicas, upstream, task, compact_after=2)
    assert shared == alone, gateways.degraded()
    # After the compaction the ladder restarts from an empty history: warned at the 3rd
    # identical call, the post-compaction guard ends the run before the ladder can veto.
    assert alone.answer and "compaction_loop_persisted" in alone.answer
    assert alone.executions == {"read_file": 2 + 3}


# --- restarts ---------------------------------------------------------------------------------


def restarted_at(
    start: Callable[[], ContextManager[str]], upstream: RespondingUpstream, label: str, request: int
) -> Outcome:
    """The change-course conversation through one gateway, replaced by a fresh one (``start``)
    right before the client's ``request``-th request (0-based)."""
    with ExitStack() as stack:
        urls = [stack.enter_context(start())]

        def before(n: int) -> None:
            if n == request:
                stack.close()
                urls[0] = stack.enter_context(start())

        return converse(urls, upstream, f"look around after a restart ({label})", before=before)


def test_a_gateway_restarted_mid_conversation_with_redis_loses_no_vetoed_exchange(gateways, upstream, single, tmp_path):
    alone = converse(single, upstream, "look around after a restart (redis)")
    # After the veto (request 4), before the last request: a new process, same Redis.
    restarted = restarted_at(lambda: gateways.process("redis"), upstream, "redis", request=4)
    assert restarted == alone, gateways.degraded()
    assert observations(restarted.seen[-1])
    # The in-memory backend forgets it: the model no longer sees the call it was refused.
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    config = Config.model_validate({"upstream": {"base_url": upstream.url + "/v1"}})
    fresh = lambda: serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS)  # noqa: E731
    forgetful = restarted_at(fresh, upstream, "memory", request=4)
    assert not observations(forgetful.seen[-1])


# --- Redis unavailable ------------------------------------------------------------------------


def test_redis_stopped_mid_conversation_degrades_and_a_restarted_redis_is_used_again(tmp_path, upstream):
    redis_server = RedisServer(tmp_path, password="s3cret-pw").start()
    # A stopped Redis refuses connections at once: no timeout needed to notice, and a generous one
    # keeps a loaded machine from degrading the requests made after the restart.
    state = {"backend": "redis", "url": redis_server.url, "op_timeout_s": 5.0, "retry_after_s": 0.2}
    config = Config.model_validate({"upstream": {"base_url": upstream.url + "/v1"}, "state": state})
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    app = build_app(config, policies=PolicyHolder(policy))
    store = app.state.gateway.store
    counted: dict[str, int] = {}

    def before(n: int) -> None:
        if n == 2:
            redis_server.stop()
        if n == 4:
            counted["while_down"] = store.degradations
            redis_server.start()  # same port, empty data
            time.sleep(0.3)  # past retry_after_s

    try:
        with serve(app, **SERVER_OPTIONS) as url, capture_logs() as logs:
            outcome = converse([url], upstream, "look around while redis restarts", before=before)
        marks = redis_server.client().keys("loopguard:h:*")
    finally:
        redis_server.stop()
    # Every request succeeded: the conversation ran to its end.
    assert outcome.answer == "done: listed the folder"
    assert counted["while_down"] >= 2 and store.degradations == counted["while_down"]
    degraded = [e for e in logs if e["event"] == "state_degraded"]
    assert degraded and all(e["log_level"] == "warning" and e["backend"] == "redis" for e in degraded)
    assert "s3cret-pw" not in repr(logs)
    assert any(e["event"] == "state_recovered" for e in logs)
    # The restarted (empty) Redis holds this session's state again: it was used after the restart.
    assert len(marks) == 1
