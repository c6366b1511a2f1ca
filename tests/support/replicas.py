"""Gateway replicas behind a round-robin balancer, and the looping agent that talks to them.

``converse`` runs one conversation (the official openai SDK through ``Agent``) against the
scripted ``model`` upstream, sending request n to replica ``n % len(urls)``; ``Gateways`` starts
gateway processes from one config per state backend (memory, or Redis in any ``state.mode``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import yaml

from support.agent import Agent
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.process import free_port, gateway_process
from support.upstream import Reply

MARK = "[loopguard]"
READ = ("read_file", '{"path": "a.txt"}')


def observations(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "tool" and str(m.get("content", "")).startswith(MARK)]


def anchors(messages: list[dict]) -> list[str]:
    return [
        m["content"]
        for m in messages
        if m.get("role") == "system" and str(m.get("content", "")).startswith("[LoopGuard]")
    ]


def model(request: dict) -> Reply:
    """One upstream for every scenario; the task names the model's behaviour."""
    messages = request["messages"]
    task = next((m["content"] for m in messages if m.get("role") == "user"), "")
    if "stubborn" in task:
        return Reply(tool_calls=[READ])
    if messages[-1].get("role") == "tool" and messages[-1].get("content") == "a.txt b.txt":
        return Reply(content="done: listed the folder")
    if observations(messages):  # it was refused read_file: it changes course
        return Reply(tool_calls=[("list_dir", '{"path": "."}')])
    return Reply(tool_calls=[READ])


class Alternating(httpx.BaseTransport):
    """Sends request n to ``urls[n % len(urls)]``, as a round-robin load balancer would;
    ``before(n)`` runs first (a test restarts things there)."""

    def __init__(self, urls: list[str], before: Callable[[int], None] | None = None) -> None:
        self.urls, self.before, self.sent = urls, before, 0
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.before is not None:
            self.before(self.sent)
        target = httpx.URL(self.urls[self.sent % len(self.urls)])
        self.sent += 1
        request.url = request.url.copy_with(host=target.host, port=target.port)
        return self.inner.handle_request(request)


@dataclass
class Outcome:
    answer: str | None
    actions: list[str]  # x-loopguard-action of each response (unary runs)
    executions: dict[str, int]
    finish_reasons: list[str]
    seen: list[list[dict]]  # what the model was sent, request by request (call ids renamed)


def converse(
    urls: list[str],
    upstream: RespondingUpstream,
    task: str,
    *,
    stream: bool = False,
    before: Callable[[int], None] | None = None,
    compact_after: int | None = None,
) -> Outcome:
    client = openai.OpenAI(
        base_url=urls[0] + "/v1",
        api_key="sk-test",
        max_retries=0,
        timeout=60,
        http_client=httpx.Client(transport=Alternating(urls, before)),
    )
    agent = Agent(
        client, tools={"read_file": lambda a: "contents of a.txt", "list_dir": lambda a: "a.txt b.txt"}, stream=stream
    )
    agent.messages.append({"role": "system", "content": "You are a coding agent."})
    start = len(upstream.requests)
    if compact_after is None:
        answer = agent.run(task)
    else:  # loop a while, keep the system prompt and the task, go on from a summary
        agent.run(task, max_steps=compact_after)
        agent.messages = agent.messages[:2]
        answer = agent.run("Summary of the work so far: a.txt was read. Continue.")
    seen = [r["json"]["messages"] for r in upstream.requests[start:]]
    return Outcome(answer, agent.actions, dict(agent.executions), agent.finish_reasons, renamed_ids(seen))


def renamed_ids(requests: list[list[dict]]) -> list[list[dict]]:
    """Call ids come from a process-wide counter in the test upstream: number them by first
    appearance so two runs of one conversation compare equal."""
    names: dict[str, str] = {}

    def rename(value):
        if isinstance(value, dict):
            return {
                k: (names.setdefault(v, f"id{len(names)}") if k in ("id", "tool_call_id") else rename(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [rename(v) for v in value]
        return value

    return [rename(messages) for messages in requests]


class Gateways:
    """Gateway processes (``python -m gateway serve``) started from one config per backend."""

    def __init__(self, workdir: Path, upstream_url: str, redis: str | dict[str, Any]) -> None:
        """``redis``: the URL of a single node, or the ``state`` keys reaching a cluster or
        Sentinel set (``mode``, ``url``, ``sentinels``, ``service``)."""
        reach = {"url": redis} if isinstance(redis, str) else redis
        self.workdir, self.stack = workdir, ExitStack()
        policy = workdir / "policy.yaml"
        policy.write_text(ladder_policy())
        self.configs = {}
        for backend in ("memory", "redis"):
            path = workdir / f"{backend}.yaml"
            # op_timeout_s is the most allowed: these tests are about decisions, not a slow Redis,
            # and a loaded CI machine must not turn them into degradation tests.
            path.write_text(
                yaml.safe_dump(
                    {
                        "upstream": {"base_url": upstream_url + "/v1"},
                        "policy": str(policy),
                        "state": {"backend": backend, "key_prefix": "replicas:", "op_timeout_s": 5.0, **reach},
                    }
                )
            )
            self.configs[backend] = path

    @contextmanager
    def process(self, backend: str, port: int | None = None) -> Iterator[str]:
        port = port or free_port()
        args = ["serve", "--config", str(self.configs[backend]), "--port", str(port)]
        with gateway_process(args, port, self.workdir / f"{backend}-{port}.log", ready_timeout=60) as running:
            yield running.url

    def degraded(self) -> list[str]:
        """Every state_degraded line the processes logged: why two runs differed, if they did."""
        return [
            line
            for log in self.workdir.glob("*.log")
            for line in log.read_text().splitlines()
            if "state_degraded" in line
        ]

    def start(self, backend: str, port: int | None = None) -> str:
        return self.stack.enter_context(self.process(backend, port))
