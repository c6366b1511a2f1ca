"""End to end, a Codex-CLI-shaped run on the Responses API under the shipped default policy: a
model that repeats one shell command whose every output carries a fresh `Chunk ID`, wall time
and token count is ended within 8 executed calls; reading different files the same way is not."""

from __future__ import annotations

import itertools
import json
from contextlib import ExitStack

import openai
import pytest
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, guarded, stubborn
from support.varying import codex

from gateway.policy.loader import shipped_policy_path

DEFAULT = shipped_policy_path("default").read_text(encoding="utf-8")
MODES = [("unary", False), ("stream", False), ("helper", False), ("unary", True), ("stream", True)]
EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "Run a shell command",
    "strict": False,
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}, "yield_time_ms": {"type": "number"}}},
}
SHELL = {
    "type": "function",
    "name": "shell",
    "description": "Run a command",
    "strict": False,
    "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}},
}


@pytest.fixture
def start(tmp_path):
    with ExitStack() as stack:
        yield lambda responder: stack.enter_context(guarded(responder, tmp_path, DEFAULT))


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)


def older_codex(output: str, n: int) -> str:
    """The shell tool's output format of earlier Codex versions."""
    return f"Exit code: 0\nWall time: {n % 4}.{n % 9}1 seconds\nTotal output lines: 3\nOutput:\n{output}"


def warned(upstream) -> bool:
    return any(b"[LoopGuard]" in r["raw"] for r in upstream.requests)


@pytest.mark.parametrize(("mode", "chain"), MODES)
def test_codex_repeating_cat_is_ended_within_eight_executed_calls(start, mode, chain):
    upstream, url = start(stubborn("exec_command", json.dumps({"cmd": "cat a.txt", "yield_time_ms": 10000})))
    n = itertools.count()
    agent = ResponsesAgent(
        client(url),
        tools={"exec_command": lambda a: codex("alpha\nbeta\ngamma", next(n))},
        mode=mode,
        chain=chain,
        specs=[EXEC],
    )
    answer = agent.run("Summarize a.txt", max_steps=30)
    assert answer == "I will stop calling tools now."  # written with tools closed: the run ended
    assert agent.executions["exec_command"] <= 8
    assert warned(upstream)


@pytest.mark.parametrize(("mode", "chain"), [("unary", False), ("stream", True)])
def test_the_older_shell_format_is_ended_too(start, mode, chain):
    _upstream, url = start(stubborn("shell", json.dumps({"command": ["bash", "-lc", "cat a.txt"]})))
    n = itertools.count()
    agent = ResponsesAgent(
        client(url), tools={"shell": lambda a: older_codex("alpha", next(n))}, mode=mode, chain=chain, specs=[SHELL]
    )
    assert agent.run("Summarize a.txt", max_steps=30) == "I will stop calling tools now."
    assert agent.executions["shell"] <= 8


def reading_files(conversation: list, body: dict) -> Answer:
    done = sum(1 for i in conversation if i.get("type") == "function_call_output")
    if done >= 12:
        return Answer("The files define twelve handlers.")
    return Answer(calls=[("exec_command", json.dumps({"cmd": f"cat src/handler_{done}.py", "yield_time_ms": 10000}))])


@pytest.mark.parametrize(("mode", "chain"), [("unary", False), ("stream", True)])
def test_codex_reading_different_files_is_untouched(start, mode, chain):
    upstream, url = start(reading_files)
    n = itertools.count()
    tools = {"exec_command": lambda a: codex(f"def handle():\n    return '{a['cmd']}'", next(n))}
    agent = ResponsesAgent(client(url), tools=tools, mode=mode, chain=chain, specs=[EXEC])
    assert agent.run("What do the handlers do?", max_steps=30) == "The files define twelve handlers."
    assert agent.executions["exec_command"] == 12
    assert not any(b"[loopguard" in r["raw"].lower() for r in upstream.requests)
