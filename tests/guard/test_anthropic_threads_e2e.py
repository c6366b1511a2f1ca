"""Anthropic message threads end to end: the anthropic SDK's tool runner (which threads by
default: each request after the first carries only its new tool_result message), a real
gateway and a scripted upstream that keeps threads with the API's rules, on loopback.

A looping runner on a thread must be ended exactly like the same runner sending its whole
history (``thread=False``), and every request the gateway makes must be one the thread accepts.
"""

from __future__ import annotations

import anthropic
import pytest
from anthropic import beta_tool
from support.anthropic_upstream import Said, stubborn
from support.thread_upstream import threads


@beta_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}: nothing new"


def client(gateway: str, key: str = "sk-ant-client") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway, api_key=key, max_retries=0, timeout=20)


def run(gateway: str, threaded: bool, stream: bool) -> list[anthropic.types.beta.BetaMessage]:
    options = {} if threaded else {"thread": False}
    runner = client(gateway).beta.messages.tool_runner(
        model="claude-test",
        max_tokens=512,
        tools=[read_file],
        max_iterations=15,
        stream=stream,
        system="You fix bugs.",
        messages=[{"role": "user", "content": "summarize a.txt"}],
        **options,
    )
    if not stream:
        return list(runner)
    return [each.get_final_message() for each in runner]


def text(message) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_tool_runner_on_a_thread_is_ended_like_one_sending_its_whole_history(threads, stream):
    whole_upstream, whole_gateway = threads(stubborn())
    whole = run(whole_gateway, threaded=False, stream=stream)
    threaded_upstream, threaded_gateway = threads(stubborn())
    threaded = run(threaded_gateway, threaded=True, stream=stream)

    assert len(threaded) == len(whole) < 15  # ended by the gateway, not by max_iterations
    assert threaded[-1].stop_reason == whole[-1].stop_reason == "end_turn"
    assert text(threaded[-1]) == text(whole[-1])
    assert threaded_upstream.rejections == []  # every request was valid for the thread's rules
    kinds = [(r["json"].get("thread") or {}).get("type") for r in threaded_upstream.requests]
    assert kinds[0] == "create" and "continue" in kinds  # the healthy part stayed threaded
    assert len(threaded_upstream.requests) == len(whole_upstream.requests)


def test_a_thread_the_guard_leaves_alone_goes_upstream_byte_for_byte(threads):
    steps = iter(range(100))

    def healthy(body: dict) -> Said:
        step = next(steps)
        return Said(calls=[("read_file", {"path": f"f{step}.py"})]) if step < 4 else Said(text="Done.")

    upstream, gateway = threads(healthy)
    messages = run(gateway, threaded=True, stream=False)

    assert text(messages[-1]) == "Done." and upstream.rejections == []
    continues = [r for r in upstream.requests if r["json"].get("thread", {}).get("type") == "continue"]
    assert len(continues) == 4
    assert all("tools" not in r["json"] and "system" not in r["json"] for r in continues)
