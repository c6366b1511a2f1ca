"""The fleet view through real gateways: gateway processes (one on memory; two replicas on one
real redis-server, requests alternating between them) and many concurrent agents on the official
openai SDK (sync, async, streaming), against a scripted model upstream.

An MCP tool breaks mid-run: the first N failing sessions retry it as they would anyway; from the
Nth on every agent is told at once after one failing call, a retry is refused (never executed),
another tenant's agents are never told, a failing test suite in many sessions marks nothing down,
a success lifts it; each change is audited once for the whole fleet.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import openai
import pytest
import yaml
from support.agent import Agent, declare
from support.looping import RespondingUpstream
from support.process import free_port, gateway_process
from support.redis_server import RedisServer
from support.replicas import Alternating
from support.servers import serve
from support.upstream import Reply

N = 3  # fleet.sessions
BROKEN = "MCP error -32603: crm backend unavailable (connection refused)"
TOOL = "mcp__crm__lookup_customer"
KEYS = {"acme": ("sk-acme-one", "sk-acme-two"), "globex": ("sk-globex",)}
TOLD = "is down for every agent"


def model(request: dict) -> Reply:
    """A model that sweeps customer ids while the lookups fail, until it is told the tool is down
    or a call is refused; a "stubborn" one retries once after being told. A test-suite task runs
    the tests twice, then answers."""
    messages = request["messages"]
    task = next(m["content"] for m in messages if m["role"] == "user")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    told = any(TOLD in str(m.get("content")) for m in messages if m["role"] == "system")
    if "tests" in task:
        return Reply(content="the tests fail") if len(results) >= 2 else Reply(tool_calls=[("run_tests", "{}")])
    if results and results[-1].startswith("[loopguard]"):
        return Reply(content="crm is unavailable: reported")
    if results and not results[-1].startswith("MCP error"):
        return Reply(content="found the customer")
    if (told and "stubborn" not in task) or len(results) >= 3:
        return Reply(content="crm is unavailable: reported")
    return Reply(tool_calls=[(TOOL, json.dumps({"id": 17 + 25 * len(results)}))])


@dataclass
class Crm:
    """The MCP tool as the agents' harness runs it: broken or not."""

    broken: bool = False
    calls: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lookup(self, session: str, args: dict) -> str:
        with self.lock:
            self.calls[session] += 1
        return BROKEN if self.broken else f"customer {args.get('id')}: Ada Lovelace"


class Fleet:
    def __init__(self, urls: list[str], crm: Crm) -> None:
        self.urls, self.crm = urls, crm

    def run(self, key: str, session: str, task: str, *, stream: bool = False) -> Agent:
        client = openai.OpenAI(
            base_url=self.urls[0] + "/v1",
            api_key=key,
            max_retries=0,
            timeout=60,
            http_client=httpx.Client(transport=Alternating(self.urls)),
        )
        agent = Agent(
            client,
            tools={TOOL: lambda a: self.crm.lookup(session, a), "run_tests": lambda a: "FAILED 3 tests\nExit code: 1"},
            stream=stream,
            headers={"x-loopguard-session": session},
            specs=declare(TOOL, "run_tests"),
        )
        agent.messages.append({"role": "system", "content": "You are a support agent."})
        agent.run(f"{task} (ticket {session})")
        return agent

    async def run_async(self, key: str, session: str, task: str) -> int:
        """The async SDK's loop; returns the lookups the agent executed."""
        async with httpx.AsyncClient() as http:
            client = openai.AsyncOpenAI(
                base_url=self.urls[1 % len(self.urls)] + "/v1", api_key=key, max_retries=0, http_client=http
            )
            messages = [
                {"role": "system", "content": "You are a support agent."},
                {"role": "user", "content": f"{task} (ticket {session})"},
            ]
            for _ in range(8):
                completion = await client.chat.completions.create(
                    model="m",
                    messages=messages,
                    tools=declare(TOOL, "run_tests"),
                    extra_headers={"x-loopguard-session": session},
                )
                message = completion.choices[0].message.model_dump(exclude_none=True)
                messages.append(message)
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    result = await asyncio.to_thread(
                        self.crm.lookup, session, json.loads(call["function"]["arguments"])
                    )
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            return self.crm.calls[session]


@pytest.fixture(params=["memory", "redis"])
def gateways(request, tmp_path: Path) -> Iterator[tuple[list[str], RespondingUpstream, Path]]:
    upstream = RespondingUpstream(model)
    with ExitStack() as stack:
        upstream_url = stack.enter_context(serve(upstream.app))
        state: dict = {"backend": "memory"}
        if request.param == "redis":
            server = RedisServer(tmp_path).start()
            stack.callback(server.stop)
            state = {"backend": "redis", "url": server.url, "key_prefix": "fleet:", "op_timeout_s": 5.0}
        config = tmp_path / "config.yaml"
        keys = [{"key": key, "tenant": tenant} for tenant, names in KEYS.items() for key in names]
        config.write_text(
            yaml.safe_dump(
                {
                    "upstream": {"base_url": upstream_url + "/v1"},
                    "state": state,
                    "auth": {"keys": keys, "metrics_keys": ["ops-key"]},
                    "fleet": {"sessions": N, "window_minutes": 10},
                }
            )
        )
        urls = []
        for n in range(1 if request.param == "memory" else 2):
            port = free_port()
            args = ["serve", "--config", str(config), "--port", str(port)]
            running = stack.enter_context(gateway_process(args, port, tmp_path / f"gw{n}.log", ready_timeout=60))
            urls.append(running.url)
        yield urls, upstream, tmp_path


def events(workdir: Path, name: str) -> list[dict]:
    found = []
    for log in workdir.glob("gw*.log"):
        for line in log.read_text().splitlines():
            if f'"event": "{name}"' in line or f'"event":"{name}"' in line:
                found.append(json.loads(line))
    return found


def of(upstream: RespondingUpstream, session: str) -> list[dict]:
    """What the model was sent for ``session`` (its ticket is in the task)."""
    return [r for r in upstream.requests if f"(ticket {session})" in r["json"]["messages"][1]["content"]]


def anchors_sent(upstream: RespondingUpstream, session: str) -> list[str]:
    return [
        m["content"]
        for r in of(upstream, session)
        for m in r["json"]["messages"]
        if m["role"] == "system" and TOLD in str(m["content"])
    ]


def test_a_tool_broken_mid_run_is_down_fleet_wide_and_agents_are_told_once(gateways):
    urls, upstream, workdir = gateways
    crm = Crm()
    fleet = Fleet(urls, crm)
    acme_one, acme_two = KEYS["acme"]

    # The tool works: agents find their customer, nothing is said.
    for n in range(2):
        assert fleet.run(acme_one, f"ok-{n}", f"find customer {n}").messages[-1]["content"] == "found the customer"

    # It breaks. A failing test suite in many sessions (a local tool) marks nothing down.
    crm.broken = True
    tests = [threading.Thread(target=fleet.run, args=(acme_two, f"tests-{n}", "run the tests")) for n in range(5)]
    for thread in tests:
        thread.start()
    for thread in tests:
        thread.join()

    # The first N-1 failing sessions sweep ids as before: nobody can tell them yet.
    for n in range(N - 1):
        fleet.run(acme_one if n % 2 else acme_two, f"early-{n}", f"find customer {n}")
        assert crm.calls[f"early-{n}"] == 3 and not anchors_sent(upstream, f"early-{n}")
    # The Nth failing session is told at its first failure, and stops.
    fleet.run(acme_one, "nth", "find customer 9")
    assert crm.calls["nth"] == 1
    (anchor,) = anchors_sent(upstream, "nth")
    assert TOOL in anchor and f"{N - 1} other sessions" in anchor and "crm backend unavailable" in anchor
    assert "Do not retry it" in anchor

    # Many agents at once, sync, streaming and async, some stubborn: each executes one failing
    # call; a stubborn one's retry is refused, never executed.
    def later(n: int) -> None:
        fleet.run(
            KEYS["acme"][n % 2],
            f"later-{n}",
            ("stubborn " if n % 3 == 0 else "") + f"find customer {n}",
            stream=n % 2 == 1,
        )

    threads = [threading.Thread(target=later, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()

    async def async_agents() -> list[int]:
        return await asyncio.gather(*(fleet.run_async(acme_two, f"async-{n}", f"find customer {n}") for n in range(4)))

    assert asyncio.run(async_agents()) == [1, 1, 1, 1]
    for thread in threads:
        thread.join()
    assert {n: crm.calls[f"later-{n}"] for n in range(8)} == dict.fromkeys(range(8), 1)
    for n in range(8):
        assert len(anchors_sent(upstream, f"later-{n}")) >= 1, n
    refused = {
        n
        for n in range(8)
        for r in of(upstream, f"later-{n}")
        if any(str(m.get("content", "")).startswith("[loopguard]") for m in r["json"]["messages"])
    }
    assert refused == {0, 3, 6}  # the stubborn ones: their retry was refused, not executed

    # Another tenant's agents calling the same tool name, failing alike: never told, and the
    # acme failures never count for them.
    for n in range(N - 1):
        fleet.run(KEYS["globex"][0], f"globex-{n}", f"find customer {n}")
        assert crm.calls[f"globex-{n}"] == 3 and not anchors_sent(upstream, f"globex-{n}")
    for n in range(5):
        assert not anchors_sent(upstream, f"tests-{n}")

    # Exactly one tool_down event for the whole fleet (whichever replica saw the Nth session).
    (down,) = events(workdir, "tool_down")
    assert down["tool"] == TOOL and down["endpoint"] == "crm" and down["sessions"] == N
    assert "crm backend unavailable" in down["error"] and down["reason"] == "sessions"

    # Fixed: the first success anywhere in the tenant lifts it; later failures start over.
    crm.broken = False
    fleet.run(acme_two, "fixed", "find customer 1")
    (up,) = events(workdir, "tool_recovered")
    assert up["tool"] == TOOL and up["reason"] == "success"
    crm.broken = True
    fleet.run(acme_one, "again", "find customer 2")
    assert crm.calls["again"] == 3 and not anchors_sent(upstream, "again")
