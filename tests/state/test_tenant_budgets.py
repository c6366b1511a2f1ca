"""One tenant's volume evicts only its own state, on the memory and the Redis backend alike.

Two ``auth.keys`` tenants share the gateway's upstream key. Tenant B floods: many large
Responses requests (their chain records and ownership claims), or many tiny sessions. Tenant A's
own response stays readable and continuable, and A's looping agent is ended exactly as it is
without B: B's flood evicted only B's oldest state. The bounds are scaled down from the defaults
(a store of 4 MiB of records, 100 sessions) so the flood overflows them as it would the defaults.
"""

from __future__ import annotations

import itertools
import json
from contextlib import ExitStack
from typing import Any

import httpx
import openai
import pytest
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, ResponsesUpstream
from support.servers import serve

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.policy.loader import shipped_policy_path
from gateway.server.app import SERVER_OPTIONS, build_app

DEFAULT = shipped_policy_path("default").read_text(encoding="utf-8")
KEYS = [{"key": "sk-a", "tenant": "a"}, {"key": "sk-b", "tenant": "b"}]
OPS = "sk-ops"
FILLER = "filler"  # B's requests start with it: the model answers them in text
RECORD_BUDGET = 4 * 1024 * 1024
SESSION_BUDGET = 100


def model() -> Any:
    """Answers B's filler (and A's questions) in text. A's task is a loop on one call that, after
    each veto, makes one new detour call and goes back: only the vetoes the gateway keeps (they
    are not in the client's history) carry the count on to the end of the ladder."""
    fresh = itertools.count(1)

    def respond(conversation: list[dict[str, Any]], body: dict[str, Any]) -> Answer:
        first = conversation[0].get("content") if conversation else ""
        if not (isinstance(first, str) and first.startswith("Loop")):
            return Answer("ok")
        if body.get("tool_choice") == "none":
            return Answer("I could not read a.txt.")
        last = conversation[-1]
        if last.get("type") == "function_call_output" and "[loopguard]" in str(last.get("output")).lower():
            return Answer(calls=[("list_dir", json.dumps({"path": f"dir{next(fresh)}"}))])
        return Answer(calls=[("read_file", '{"path": "a.txt"}')])

    return respond


def state(backend: str, redis_server: Any) -> dict[str, Any]:
    """Memory: the global bounds overflow (fair share). Redis: B's own caps do."""
    if backend == "memory":
        return {"max_chain_bytes": RECORD_BUDGET, "max_sessions": SESSION_BUDGET}
    return {
        "backend": "redis",
        "url": redis_server.url,
        "tenant_max_chain_bytes": RECORD_BUDGET,
        "tenant_max_sessions": SESSION_BUDGET,
        "op_timeout_s": 2.0,
    }


@pytest.fixture(params=["memory", "redis"])
def gateway(request, tmp_path):
    """Start a gateway (``state`` overrides on top of the backend's budgets); returns its URL."""
    backend = request.param
    redis_server = request.getfixturevalue("redis_server") if backend == "redis" else None
    with ExitStack() as stack:

        def start(**overrides: Any) -> str:
            upstream = ResponsesUpstream(model())
            upstream_url = stack.enter_context(serve(upstream.app))
            policy = tmp_path / "policy.yaml"
            policy.write_text(DEFAULT)
            config = Config.model_validate(
                {
                    "upstream": {"base_url": upstream_url + "/v1", "api_key": "sk-server"},
                    "auth": {"keys": KEYS, "metrics_keys": [OPS]},
                    "state": {**state(backend, redis_server), **overrides},
                    # Each test compares runs that must not learn from each other: the fleet's
                    # recall (a next run warned at its first repeat of a stopped loop, across
                    # the gateways sharing one Redis) is tests/fleet's.
                    "fleet": {"recall": False},
                }
            )
            return stack.enter_context(serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS))

        start.backend = backend  # type: ignore[attr-defined]
        if redis_server is not None:
            start.redis = redis_server  # type: ignore[attr-defined]
        yield start


def client(url: str, key: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=30, default_headers=headers)


def evicted(url: str, kind: str) -> float:
    """``loopguard_state_budget_evictions`` of ``kind``, both rules."""
    text = httpx.get(
        url + "/metrics",
        params={"name[]": "loopguard_state_budget_evictions_total"},
        headers={"Authorization": f"Bearer {OPS}"},
        timeout=10,
    ).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("loopguard_state_budget_evictions_total{") and f'kind="{kind}"' in line
    )


def test_a_flood_of_large_responses_evicts_only_the_flooding_tenants_own(gateway):
    url = gateway()
    a, b = client(url, "sk-a"), client(url, "sk-b")
    mine = a.responses.create(model="gpt-4.1", input="Summarize a.txt")
    large = [{"role": "user", "content": FILLER + "x" * 15_000}, {"role": "user", "content": "y" * 15_000}]
    floods = [b.responses.create(model="gpt-4.1", input=large) for _ in range(300)]  # ~9 MB of records

    assert a.responses.retrieve(mine.id).id == mine.id
    assert a.responses.create(model="gpt-4.1", input="And b.txt?", previous_response_id=mine.id).output_text == "ok"
    assert b.responses.retrieve(floods[-1].id).id == floods[-1].id  # B's newest are kept...
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(floods[0].id)  # ...its oldest made room: its own
    assert evicted(url, "records") > 0


def loop_of_a(url: str, flood: Any = None) -> ResponsesAgent:
    """A's agent (whole history each request); ``flood`` runs after each of its tool calls,
    before its next request."""

    def tool(answer: str) -> Any:
        def run(args: dict) -> str:
            if flood is not None:
                flood()
            return answer

        return run

    tools = {"read_file": tool("contents of a.txt"), "list_dir": tool("files: b.txt")}
    agent = ResponsesAgent(client(url, "sk-a", **{"x-session-id": "a-run"}), tools=tools)
    agent.run("Loop over a.txt", max_steps=30)
    return agent


def test_a_flood_of_tiny_sessions_does_not_erase_another_tenants_vetoes(gateway):
    alone = loop_of_a(gateway())
    url = gateway()
    b, sessions = client(url, "sk-b"), itertools.count()

    def flood() -> None:  # more new sessions than the whole bound, between each of A's requests
        for _ in range(SESSION_BUDGET * 105 // 100):
            headers = {"x-session-id": f"b-{next(sessions)}"}
            b.responses.create(model="gpt-4.1", input=FILLER, store=False, extra_headers=headers)

    flooded = loop_of_a(url, flood)

    assert alone.executions == {"read_file": 4, "list_dir": 3}  # the ladder's count, carried by vetoes
    assert flooded.executions == alone.executions
    assert flooded.responses[-1].output_text == alone.responses[-1].output_text == "I could not read a.txt."
    assert evicted(url, "sessions") > 0
