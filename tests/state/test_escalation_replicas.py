"""Escalation does not depend on the replica: two gateways sharing one real redis-server,
requests alternating between them. A vetoed call stays vetoed whichever replica serves the
return to it (the model detouring after every veto), and a warning one replica gave escalates
on the other when the model ignores it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import httpx
import openai
import pytest
from support.agent import Agent, declare
from support.looping import RespondingUpstream
from support.seen import observations
from support.servers import serve
from support.upstream import Reply

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import build_app

ROOT = Path(__file__).resolve().parents[2]


ATTEMPTS = itertools.count(1)


def model(request: dict) -> Reply:
    if request.get("tool_choice") == "none":
        return Reply(content="stopping: a.txt could not be summarized")
    messages = request["messages"]
    last = messages[-1]
    if "edit" in messages[1]["content"]:  # a failing edit, another variation every time
        return Reply(
            tool_calls=[
                (
                    "edit_file",
                    json.dumps(
                        {"path": "a.txt", "old": f"first line\\n    value = {next(ATTEMPTS)}", "new": "first line"}
                    ),
                )
            ]
        )
    if last.get("role") == "tool" and observations({"messages": [last]}):
        return Reply(tool_calls=[("list_dir", f'{{"path": "dir{len(messages)}"}}')])
    return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])


class Alternating(httpx.BaseTransport):
    """Request n goes to ``urls[n % len(urls)]``, as a round-robin load balancer sends it."""

    def __init__(self, urls: list[str]) -> None:
        self.urls, self.sent, self.inner = urls, 0, httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        target = httpx.URL(self.urls[self.sent % len(self.urls)])
        self.sent += 1
        request.url = request.url.copy_with(host=target.host, port=target.port)
        return self.inner.handle_request(request)


def converse(redis_url: str, tmp_path: Path, task: str, stream: bool) -> Agent:
    upstream = RespondingUpstream(model)
    policy = tmp_path / "default.yaml"
    policy.write_text((ROOT / "policies" / "default.yaml").read_text(encoding="utf-8"))
    with serve(upstream.app) as upstream_url:
        config = Config.model_validate(
            {
                "upstream": {"base_url": upstream_url + "/v1"},
                "state": {"backend": "redis", "url": redis_url, "op_timeout_s": 5.0},
            }
        )
        apps = [build_app(config, policies=PolicyHolder(policy)) for _ in range(2)]
        with serve(apps[0]) as first, serve(apps[1]) as second:
            client = openai.OpenAI(
                base_url=first + "/v1",
                api_key="sk-test",
                max_retries=0,
                timeout=60,
                http_client=httpx.Client(transport=Alternating([first, second])),
            )
            agent = Agent(
                client,
                tools={
                    "read_file": lambda a: "contents of a.txt",
                    "list_dir": lambda a: f"files in {a['path']}",
                    "edit_file": lambda a: f"Error: `{a['old']}` not found in a.txt",
                },
                stream=stream,
                specs=declare("read_file", "list_dir", "edit_file"),
            )
            agent.messages.append({"role": "system", "content": "You are a coding agent."})
            agent.answer = agent.run(f"{task} ({stream=})", max_steps=40)

    return agent


@pytest.mark.parametrize("stream", [False, True])
def test_a_detour_to_another_replica_does_not_restart_the_ladder(redis_server, tmp_path, stream):
    agent = converse(redis_server.url, tmp_path, "summarize a.txt", stream)
    assert agent.answer == "stopping: a.txt could not be summarized"

    assert agent.executions == {"read_file": 4, "list_dir": 3}
    if not stream:
        assert agent.actions == ["pass", "pass", "pass", "warn", "reject", "reject", "reject", "terminate"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_warning_given_by_one_replica_escalates_on_the_other(redis_server, tmp_path, stream):
    agent = converse(redis_server.url, tmp_path, "edit a.txt", stream)
    assert agent.answer == "stopping: a.txt could not be summarized"
    # Warned after the 3rd failing edit (replica 2), again after the 4th (replica 1, which
    # only knows of the first warning from Redis); then refused and ended.
    assert agent.executions == {"edit_file": 4}
    if not stream:
        assert agent.actions == ["pass", "pass", "pass", "warn", "terminate"]
