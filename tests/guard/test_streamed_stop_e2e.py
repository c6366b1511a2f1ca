"""A streamed stop reads like the non-streamed one: once a conversation is at warn level, each
round's text is held until its calls are judged, so the words next to a refused call ("Let me
read a.txt again.") never reach the client, streamed or not. Healthy streams relay at once."""

from __future__ import annotations

import pytest
from support.anthropic_upstream import Said
from support.claude_agent import ClaudeAgent
from support.claude_gateway import start_claude  # noqa: F401 - the fixture

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
