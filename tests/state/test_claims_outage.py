"""A stalled Redis never turns a tenant's own object into a 404, during the stall or after it.

Two ``auth.keys`` tenants share the gateway's upstream key, on the Redis backend; redis-server
is paused (SIGSTOP: connections stay open, nothing answers). The tenant's responses created
before and during the stall stay readable and continuable through it, and after it on this
gateway and on a second replica (the claims made during the stall were written once Redis
answered). Another tenant naming them is refused again as soon as Redis answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import httpx
import openai
import pytest
from support.policies import ladder_policy
from support.responses_upstream import Answer, ResponsesUpstream
from support.servers import serve
from support.waiting import wait_for

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app

KEYS = [{"key": "sk-a", "tenant": "a"}, {"key": "sk-b", "tenant": "b"}]
OPS = "sk-ops"
ASK = {"model": "gpt-4.1", "input": "Summarize a.txt"}


@pytest.fixture
def replicas(tmp_path, redis_server):
    """Two gateways on one Redis and one upstream; yields their URLs."""
    upstream = ResponsesUpstream(lambda conversation, body: Answer("ok"))
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    with ExitStack() as stack:
        upstream_url = stack.enter_context(serve(upstream.app))
        config = Config.model_validate(
            {
                "upstream": {"base_url": upstream_url + "/v1", "api_key": "sk-server"},
                "auth": {"keys": KEYS, "metrics_keys": [OPS]},
                "state": {"backend": "redis", "url": redis_server.url, "retry_after_s": 0.2},
            }
        )
        yield [
            stack.enter_context(serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS))
            for _ in range(2)
        ]


def client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=30)


@contextmanager
def paused(redis_server) -> Iterator[None]:
    redis_server.pause()
    try:
        yield
    finally:
        redis_server.resume()


def metric(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {OPS}"}, timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + " "))


def refused(call) -> bool:
    try:
        call()
    except openai.NotFoundError:
        return True
    return False


def test_a_paused_redis_never_turns_a_tenants_own_response_into_a_404(replicas, redis_server):
    url, other_replica = replicas
    a, b = client(url, "sk-a"), client(url, "sk-b")
    before = a.responses.create(**ASK)

    with paused(redis_server):
        assert a.responses.retrieve(before.id).id == before.id
        during = a.responses.create(**ASK, previous_response_id=before.id)
        assert a.responses.retrieve(during.id).id == during.id
        assert a.responses.create(**ASK, previous_response_id=during.id).output_text == "ok"
        # The tenant's own were vouched for by this process's own claims; an id it cannot vouch
        # for either way is let through, and counted.
        assert metric(url, "loopguard_state_claims_unverified_total") == 0
        b.responses.retrieve(before.id)
        assert metric(url, "loopguard_state_claims_unverified_total") == 1

    # Once Redis answers, another tenant is refused again: the stall's fail-open is over...
    assert wait_for(lambda: refused(lambda: b.responses.retrieve(before.id)), timeout=30)
    assert refused(lambda: b.responses.retrieve(during.id))
    assert refused(lambda: b.responses.create(**ASK, previous_response_id=during.id))
    # ...and the response created during the stall is the tenant's, on every replica.
    for where in (url, other_replica):
        mine = client(where, "sk-a")
        assert mine.responses.retrieve(before.id).id == before.id
        assert mine.responses.retrieve(during.id).id == during.id
        assert mine.responses.create(**ASK, previous_response_id=during.id).output_text == "ok"
        assert refused(lambda where=where: client(where, "sk-b").responses.retrieve(during.id))
    assert metric(url, "loopguard_state_claims_unwritten") == 0
