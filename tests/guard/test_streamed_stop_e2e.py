"""A streamed stop reads like the non-streamed one: once a conversation is at warn level, each
round's text is held until its calls are judged, so the words next to a refused call ("Let me
read a.txt again.") never reach the client, streamed or not. Healthy streams relay at once."""

from __future__ import annotations

from contextlib import ExitStack

import anthropic
import pytest
from anthropic import beta_tool
from support.anthropic_upstream import Said
from support.claude_agent import ClaudeAgent
from support.claude_gateway import start_claude
from support.policies import ladder_policy
from support.servers import serve
from support.thread_upstream import ThreadUpstream

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app

SAYING = "Let me read a.txt again."


def chatty(body: dict) -> Said:
    if body.get("tool_choice") == {"type": "none"}:
        return Said(text="I kept reading a.txt; nothing in it changes.")
    return Said(text=SAYING, calls=[("read_file", {"path": "a.txt"})])


def texts(agent: ClaudeAgent) -> list[str]:
    return [b["text"] for m in agent.messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "text"]


def test_a_streamed_stop_reads_exactly_like_the_non_streamed_one(start_claude):
    _, unary_client, _ = start_claude(chatty)
    unary = ClaudeAgent(unary_client, stream=False)
    unary.run("summarize a.txt")
    _, stream_client, _ = start_claude(chatty)
    streamed = ClaudeAgent(stream_client, stream=True)
    streamed.run("summarize a.txt")

    assert texts(streamed) == texts(unary)
    assert streamed.messages[-1] == unary.messages[-1]
    assert texts(streamed).count(SAYING) == 3  # the three executed steps; refused rounds never shown


@pytest.mark.parametrize("stream", [False, True])
def test_the_final_answer_follows_the_executed_steps_only(start_claude, stream):
    _, client, _ = start_claude(chatty)
    agent = ClaudeAgent(client, stream=stream)
    answer = agent.run("summarize a.txt")
    assert answer and SAYING not in answer


@beta_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}: nothing new"


@pytest.fixture
def threaded(tmp_path):
    """A gateway in front of an upstream that keeps message threads: its URL."""
    with ExitStack() as stack:

        def start(responder) -> str:
            upstream_url = stack.enter_context(serve(ThreadUpstream(responder).app))
            policy = tmp_path / "policy.yaml"
            policy.write_text(ladder_policy())
            config = Config.model_validate(
                {"upstream": {"base_url": "http://127.0.0.1:9/v1", "anthropic_base_url": upstream_url}}
            )
            return stack.enter_context(serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS))

        yield start


def runner_texts(gateway: str, stream: bool) -> list[str]:
    """Every text the SDK's tool runner (on a thread) got, message by message."""
    api = anthropic.Anthropic(base_url=gateway, api_key="sk-ant-client", max_retries=0, timeout=20)
    runner = api.beta.messages.tool_runner(
        model="claude-test",
        max_tokens=512,
        tools=[read_file],
        max_iterations=15,
        stream=stream,
        messages=[{"role": "user", "content": "summarize a.txt"}],
    )
    messages = [each.get_final_message() for each in runner] if stream else list(runner)
    return ["".join(b.text for b in m.content if b.type == "text") for m in messages]


def test_a_streamed_stop_on_a_thread_reads_exactly_like_the_non_streamed_one(threaded):
    unary = runner_texts(threaded(chatty), stream=False)
    streamed = runner_texts(threaded(chatty), stream=True)
    assert streamed == unary
    assert streamed.count(SAYING) == 3 and SAYING not in streamed[-1]
