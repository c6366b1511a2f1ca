"""End to end on Anthropic's models on Vertex AI: ``AnthropicVertex`` (its tool runner and a
hand-written agent loop, streamed and not) aimed at the gateway's ``/vertex/v1``, a real
gateway and a scripted Vertex upstream that checks every request's bearer token, refuses a body
naming a model or lacking ``anthropic_version``, and streams when the path says so."""

from __future__ import annotations

import re

import pytest
from anthropic import beta_tool
from support.anthropic_upstream import Said, healthy, stubborn
from support.servers import serve
from support.vertex_gateway import claude_client, start_vertex
from support.vertex_upstream import CLAUDE, VertexUpstream

FINAL = "I could not finish: the file never changed."
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def stubborn_until_closed(body: dict) -> Said:
    """The same call forever; with tools closed (the gateway's final ask), its own answer."""
    if (body.get("tool_choice") or {}).get("type") == "none":
        return Said(text=FINAL)
    return stubborn()(body)


def agent_run(client, stream: bool, limit: int = 20) -> tuple[str, int]:
    """A hand-written agent loop: (the last answer's text, executed calls)."""
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    executions = 0
    for _ in range(limit):
        if stream:
            with client.messages.stream(model=CLAUDE, max_tokens=512, tools=TOOLS, messages=messages) as events:
                reply = events.get_final_message()
        else:
            reply = client.messages.create(model=CLAUDE, max_tokens=512, tools=TOOLS, messages=messages)
        calls = [b for b in reply.content if b.type == "tool_use"]
        text = "".join(b.text for b in reply.content if b.type == "text")
        if not calls:
            return text, executions
        executions += len(calls)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        results = [{"type": "tool_result", "tool_use_id": c.id, "content": "the same content"} for c in calls]
        messages.append({"role": "user", "content": results})
    raise AssertionError("the run never ended")


def runner_run(client, stream: bool) -> tuple[str, int]:
    """The SDK's tool runner running ``read_file`` itself."""
    executed = []

    @beta_tool
    def read_file(path: str) -> str:
        """Read a file."""
        executed.append(path)
        return "the same content"

    runner = client.beta.messages.tool_runner(
        model=CLAUDE,
        max_tokens=512,
        tools=[read_file],
        max_iterations=15,
        stream=stream,
        messages=[{"role": "user", "content": "summarize a.txt"}],
    )
    messages = [each.get_final_message() for each in runner] if stream else list(runner)
    return "".join(b.text for b in messages[-1].content if b.type == "text"), len(executed)


@pytest.mark.parametrize("credentials", ["client", "gateway"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("run", [agent_run, runner_run])
def test_a_looping_agent_is_ended_with_the_models_own_answer(start_vertex, run, stream, credentials):
    started = start_vertex(claude=stubborn_until_closed, credentials=credentials)

    answer, executions = run(started.claude(), stream)

    assert answer == FINAL and executions == 3 <= 8  # warned, refused, ended with tools closed
    cloud = started.upstream
    assert cloud.anthropic.last["json"]["tool_choice"] == {"type": "none"}
    method = ":streamRawPredict" if stream else ":rawPredict"
    assert all(
        p == f"/v1/projects/proj/locations/us-east5/publishers/anthropic/models/{CLAUDE}{method}" for p in cloud.paths
    )
    assert set(cloud.tokens) == {cloud.token}
    if started.tokens is not None:
        assert started.tokens.issued == ["ya29.gateway-1"]


def bodies(cloud: VertexUpstream) -> list[bytes]:
    """The bodies the cloud received, byte for byte but for its own tool_use ids (numbered
    across runs)."""
    return [re.sub(rb"toolu_\d+", b"toolu_", r["raw"]) for r in cloud.anthropic.requests]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("run", [agent_run, runner_run])
def test_a_healthy_agent_reaches_the_cloud_byte_for_byte_and_gets_the_same_answer(start_vertex, run, stream):
    direct = VertexUpstream(claude=healthy(files=3))
    with serve(direct.app) as cloud:
        alone = run(claude_client(cloud + "/v1"), stream)
    started = start_vertex(claude=healthy(files=3))

    guarded = run(started.claude(), stream)

    assert guarded == alone == ("All files read: nothing to fix.", 3)
    assert bodies(started.upstream) == bodies(direct)
    assert started.upstream.paths == direct.paths


def test_the_token_count_is_relayed_unjudged_with_the_token(start_vertex):
    started = start_vertex(credentials="gateway")
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]

    counted = started.claude(token="anything").messages.count_tokens(model=CLAUDE, messages=messages)

    assert counted.input_tokens == 14
    assert started.upstream.paths == [
        "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"
    ]
    assert started.upstream.tokens == ["ya29.gateway-1"]
