"""Terminate mode answer on the other guarded protocols: the Anthropic Messages API (anthropic
SDK) and the Responses API (openai SDK), streamed and not."""

from __future__ import annotations

from contextlib import ExitStack

import openai
import pytest
from support.anthropic_upstream import Said
from support.claude_agent import ClaudeAgent
from support.claude_gateway import start_claude
from support.policies import ladder_policy
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, guarded

ANSWER = "I read a.txt three times and got the same text; the summary is still missing."


def closing_claude(body: dict) -> Said:
    if body.get("tool_choice") == {"type": "none"}:
        return Said(text=ANSWER)
    return Said(calls=[("read_file", {"path": "a.txt"})])


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_claude_agent_ends_with_the_models_own_answer(start_claude, stream):
    upstream, client, _ = start_claude(closing_claude)
    agent = ClaudeAgent(client, stream=stream)

    assert agent.run("summarize a.txt") == ANSWER
    assert agent.stop_reasons[-1] == "end_turn" and agent.executions["read_file"] == 3
    asked = upstream.requests[-1]["json"]
    assert asked["tool_choice"] == {"type": "none"} and asked["tools"]  # closed, still declared
    assert "[LoopGuard] You are in a loop (no progress: `read_file`, 5 times)" in str(asked["system"])


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_template_when_the_model_calls_a_tool_again(start_claude, stream):
    upstream, client, _ = start_claude(lambda body: Said(calls=[("read_file", {"path": "a.txt"})]))
    agent = ClaudeAgent(client, stream=stream)
    answer = agent.run("summarize a.txt")
    assert answer.startswith("[LoopGuard] This run was stopped") and agent.stop_reasons[-1] == "end_turn"
    assert upstream.requests[-1]["json"]["tool_choice"] == {"type": "none"}


@pytest.fixture
def start_responses(tmp_path):
    with ExitStack() as stack:
        yield lambda responder, policy=None: stack.enter_context(guarded(responder, tmp_path, policy))


def closing_responses(conversation: list, body: dict) -> Answer:
    if body.get("tool_choice") == "none":
        return Answer(ANSWER)
    return Answer(calls=[("read_file", '{"path": "a.txt"}')])


@pytest.mark.parametrize("mode", ["unary", "stream", "helper"])
def test_a_looping_responses_agent_ends_with_the_models_own_answer(start_responses, mode):
    upstream, url = start_responses(closing_responses)
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
    agent = ResponsesAgent(client, tools={"read_file": lambda a: "same"}, mode=mode)

    assert agent.run("Summarize a.txt") == ANSWER
    assert agent.responses[-1].status == "completed"
    asked = upstream.requests[-1]["json"]
    assert asked["tool_choice"] == "none"
    assert any("You are in a loop" in str(item.get("content")) for item in asked["input"])


def test_responses_headers_say_answer(start_responses):
    _upstream, url = start_responses(closing_responses, ladder_policy())
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
    history: list = [{"role": "user", "content": "go"}]
    for n in range(5):
        history += [
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": "same"},
        ]
    raw = client.responses.with_raw_response.create(model="gpt-4.1", input=history, store=False)
    assert raw.headers["x-loopguard-action"] == "terminate" and raw.headers["x-loopguard-terminate"] == "answer"
    assert raw.parse().output_text == ANSWER
