"""End to end on Bedrock's InvokeModel: the anthropic SDK's ``AnthropicBedrock`` (a plain tool loop
and the SDK's tool runner, streamed and not), a real gateway signing with its own AWS
credentials, and a scripted Bedrock runtime that verifies every SigV4 signature as AWS does."""

from __future__ import annotations

import re
from typing import Any

import anthropic
import pytest
from anthropic import beta_tool
from support.anthropic_upstream import Said
from support.bedrock_gateway import bedrock_client, start_bedrock
from support.bedrock_upstream import MODEL, PROFILE_ARN

__all__ = ["start_bedrock"]

FINAL = "I could not finish: a.txt never changed."
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]


def tools_closed(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice")
    return not body.get("tools") or (isinstance(choice, dict) and choice.get("type") == "none")


def stubborn(body: dict[str, Any]) -> Said:
    """Reads a.txt forever; with tools closed, its final answer."""
    return Said(text=FINAL) if tools_closed(body) else Said(calls=[("read_file", {"path": "a.txt"})])


def healthy(body: dict[str, Any]) -> Said:
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if step < 3:
        return Said(text=f"Reading file {step}.", calls=[("read_file", {"path": f"src/f{step}.py"})])
    return Said(text="All files read: nothing to fix.")


def ids_out(body: bytes) -> bytes:
    """``body`` without the scripted model's tool ids (each run numbers its own)."""
    return re.sub(rb"toolu_\d+", b"toolu_", body)


def tool_loop(client: anthropic.AnthropicBedrock, stream: bool, model: str = MODEL, limit: int = 20) -> tuple[str, int]:
    """An application's own agent loop: (final text, executed calls)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "summarize a.txt"}]
    executed = 0
    for _ in range(limit):
        if stream:
            with client.messages.stream(model=model, max_tokens=256, messages=messages, tools=TOOLS) as events:
                reply = events.get_final_message()
        else:
            reply = client.messages.create(model=model, max_tokens=256, messages=messages, tools=TOOLS)
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text"), executed
        executed += len(calls)
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": c.id, "content": "the same text"} for c in calls],
            }
        )
    raise AssertionError("the run never ended")


def runner(client: anthropic.AnthropicBedrock, stream: bool) -> tuple[str, int]:
    """The SDK's tool runner: it runs ``read_file`` itself."""
    executed: list[str] = []

    @beta_tool
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: the file
        """
        executed.append(path)
        return "the same text"

    run = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        tools=[read_file],
        messages=[{"role": "user", "content": "summarize a.txt"}],
        stream=stream,
    )
    last = None
    for step in run:
        last = step.get_final_message() if stream else step
    assert last is not None
    return "".join(b.text for b in last.content if b.type == "text"), len(executed)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("agent", [tool_loop, runner])
def test_a_looping_agent_is_ended_with_the_models_answer(start_bedrock, agent, stream):
    upstream, url = start_bedrock(stubborn)

    answer, executed = agent(bedrock_client(url), stream)

    assert answer == FINAL  # the model's own answer, written with tools closed
    assert executed <= 8
    assert upstream.refused == []  # every request the gateway sent was signed right
    assert b"[LoopGuard]" in upstream.requests[3]["raw"]  # warned, then the body re-signed
    assert tools_closed(upstream.requests[-1]["json"])
    action = "invoke-with-response-stream" if stream else "invoke"
    assert all(r["raw_path"] == f"/model/{MODEL}/{action}" for r in upstream.requests)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", [MODEL, PROFILE_ARN], ids=["model-id", "profile-arn"])
def test_a_healthy_agent_gets_what_it_gets_without_the_gateway(start_bedrock, stream, model):
    upstream, url = start_bedrock(healthy)
    direct = tool_loop(bedrock_client(upstream.url), stream, model)
    sent_directly = [ids_out(r["raw"]) for r in upstream.requests]
    upstream.requests.clear()

    through = tool_loop(bedrock_client(url), stream, model)

    assert through == direct == ("All files read: nothing to fix.", 3)
    assert [ids_out(r["raw"]) for r in upstream.requests] == sent_directly  # the client's bytes
    assert upstream.refused == []  # re-signed by the gateway, valid
    assert {r["raw_path"].rpartition("/")[0] for r in upstream.requests} == {"/model/" + model.replace("/", "%2F")}
