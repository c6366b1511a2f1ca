"""Escalation on the Responses API (the openai SDK's ``responses`` client, unary and streamed, a
whole history or a ``previous_response_id`` chain): a new detour after every veto does not
restart the ladder, and a varied failing edit after its warning is refused, then ended."""

from __future__ import annotations

import itertools
import json
from contextlib import ExitStack

import openai
import orjson
import pytest
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, guarded

from gateway.policy.loader import shipped_policy_path

DEFAULT = shipped_policy_path("default").read_text(encoding="utf-8")
MODES = [("unary", False), ("stream", True)]


@pytest.fixture
def start(tmp_path):
    with ExitStack() as stack:
        yield lambda responder: stack.enter_context(guarded(responder, tmp_path, DEFAULT))


def refused_last(conversation: list[dict]) -> bool:
    last = conversation[-1] if conversation else {}
    return last.get("type") == "function_call_output" and "[loopguard]" in orjson.dumps(last).decode().lower()


def agent(url: str, mode: str, chain: bool, tools: dict) -> ResponsesAgent:
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
    return ResponsesAgent(client, tools=tools, mode=mode, chain=chain)


@pytest.mark.parametrize(("mode", "chain"), MODES)
def test_a_new_detour_after_each_veto_ends_at_the_ladders_count(start, mode, chain):
    fresh = itertools.count(1)

    def respond(conversation, body):
        if body.get("tool_choice") == "none":
            return Answer("I could not read a.txt.")
        if refused_last(conversation):
            return Answer(calls=[("list_dir", json.dumps({"path": f"dir{next(fresh)}"}))])
        return Answer(calls=[("read_file", '{"path": "a.txt"}')])

    _upstream, url = start(respond)
    looping = agent(
        url, mode, chain, {"read_file": lambda a: "contents of a.txt", "list_dir": lambda a: f"files in {a['path']}"}
    )
    assert looping.run("Summarize a.txt", max_steps=30) == "I could not read a.txt."
    assert looping.executions == {"read_file": 4, "list_dir": 3}


@pytest.mark.parametrize(("mode", "chain"), MODES)
def test_a_varied_failing_edit_after_its_warning_is_refused_then_ended(start, mode, chain):
    attempt = itertools.count(1)

    def respond(conversation, body):
        if body.get("tool_choice") == "none":
            return Answer("The edit could not be applied.")
        args = {"path": "app.py", "old_str": f"return total + {next(attempt)}", "new_str": "return total"}
        return Answer(calls=[("edit_file", json.dumps(args))])

    _upstream, url = start(respond)
    editing = agent(url, mode, chain, {"edit_file": lambda a: f"Error: old_str `{a['old_str']}` not found in app.py"})
    editing.specs = [
        {
            "type": "function",
            "name": "edit_file",
            "description": "edit",
            "strict": False,
            "parameters": {"type": "object"},
        }
    ]
    assert editing.run("Fix total() in app.py", max_steps=30) == "The edit could not be applied."
    assert editing.executions == {"edit_file": 4}
