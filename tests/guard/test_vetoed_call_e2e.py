"""A vetoed call stays vetoed for the run: a model that answers each veto with one different call
(new arguments every time) and then goes back to the refused call is refused again, and its
count goes on until the run ends, through the real gateway with the shipped default policy."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from support.agent import Agent
from support.seen import observations
from support.upstream import Reply

from gateway.audit.memory_sink import MemorySink

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")
READ = ("read_file", '{"path": "a.txt"}')


def detouring(detour: str = "list_dir", back: tuple[str, str] = READ):
    """Loops on ``back``; right after each veto makes one new call (new arguments each time),
    then goes back to ``back``."""
    fresh = itertools.count(1)

    def respond(request: dict) -> Reply:
        if request.get("tool_choice") == "none":
            return Reply(content="I could not read a.txt; stopping here.")
        last = request["messages"][-1]
        if last.get("role") == "tool" and observations({"messages": [last]}):
            return Reply(tool_calls=[(detour, f'{{"path": "dir{next(fresh)}"}}')])
        return Reply(tool_calls=[back])

    return respond


def run(start_guarded, responder, policy: str = DEFAULT, stream: bool = False, max_steps: int = 40):
    _upstream, client, _ = start_guarded(responder, policy)
    events = MemorySink()
    client.gateway_app.state.gateway.audit.add(events)
    agent = Agent(
        client,
        tools={
            "read_file": lambda a: "contents of a.txt",
            "list_dir": lambda a: f"files in {a.get('path')}: x{a.get('path')}.txt",
            "run_tests": lambda a: "1 failed",
        },
        stream=stream,
    )
    answer = agent.run("summarize a.txt", max_steps=max_steps)
    return agent, events, answer


@pytest.mark.parametrize("stream", [False, True])
def test_a_new_detour_after_each_veto_does_not_restart_the_ladder(start_guarded, stream):
    agent, events, answer = run(start_guarded, detouring(), stream=stream)

    # 4 reads ran (3 pass, the 4th warned), the 5th was vetoed; each return after a detour is
    # refused again and counted on: 6, 7, and the 8th ends the run.
    assert agent.executions == {"read_file": 4, "list_dir": 3}
    assert answer == "I could not read a.txt; stopping here."
    refused = [(e.action, e.detector, e.count) for e in events.events if e.phase == "response"]
    assert refused == [
        ("reject", "no_progress", 5),
        ("reject", "vetoed_call", 6),
        ("reject", "vetoed_call", 7),
        ("terminate", "vetoed_call", 8),
    ]
    if not stream:
        assert agent.actions == ["pass", "pass", "pass", "warn", "reject", "reject", "reject", "terminate"]


def test_without_the_rule_the_detour_lets_the_refused_call_run_again(start_guarded):
    """What the rules prevent: the same model through the default policy without vetoed_call
    and ignored_warning (which also counts a warned call's returns) runs the refused call again
    after a detour."""
    policy = DEFAULT
    for name in ("vetoed_call", "ignored_warning"):
        policy = policy.replace(f"  {name}:\n    enabled: true", f"  {name}:\n    enabled: false")
    assert policy.count("enabled: false") == DEFAULT.count("enabled: false") + 2
    agent, _, _ = run(start_guarded, detouring(), policy=policy, max_steps=16)
    assert agent.executions["read_file"] > 4


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_call_returned_to_after_a_detour_stays_refused(start_guarded, stream):
    """The same with a failing test run (error_repeat refuses it) and a read of a new file as
    the detour each time."""

    def responder(request):
        return detouring("read_file", ("run_tests", '{"path": "tests/"}'))(request)

    _upstream, client, _ = start_guarded(responder, DEFAULT)
    events = MemorySink()
    client.gateway_app.state.gateway.audit.add(events)
    agent = Agent(
        client,
        tools={
            "read_file": lambda a: f"text of {a.get('path')}",
            "run_tests": lambda a: "Error: 1 failed, exit code 1",
        },
        stream=stream,
    )
    agent.run("make the tests pass", max_steps=40)

    assert agent.executions["run_tests"] == 4
    refused = [(e.action, e.count) for e in events.events if e.phase == "response"]
    assert refused == [("reject", 5), ("reject", 6), ("reject", 7), ("terminate", 8)]


def test_a_model_that_moves_on_after_the_veto_is_not_refused_again(start_guarded):
    """Healthy look-alike: after the veto the model works on other things and never returns to
    the refused call; nothing more is refused and the run ends with the model's own answer."""
    done = itertools.count(1)

    def responder(request):
        last = request["messages"][-1]
        if last.get("role") == "tool" and observations({"messages": [last]}):
            return Reply(tool_calls=[("list_dir", '{"path": "."}')])
        if any(m.get("role") == "tool" and "files in" in str(m.get("content")) for m in request["messages"]):
            n = next(done)
            if n <= 6:  # reads other files, one after the other
                return Reply(tool_calls=[("read_file", f'{{"path": "b{n}.txt"}}')])
            return Reply(content="summary written")
        return Reply(tool_calls=[READ])

    agent, events, answer = run(start_guarded, responder)
    assert answer == "summary written"
    assert [(e.action, e.count) for e in events.events if e.phase == "response"] == [("reject", 5)]
    assert agent.executions == {"read_file": 4 + 6, "list_dir": 1}


def test_a_new_user_prompt_starts_a_run_without_the_old_vetoes(start_guarded):
    """The call refused in one run is free in the next one (a new user message in the same
    conversation): a veto holds for the run, not for the conversation."""

    def responder(request):
        messages = request["messages"]
        user = [m for m in messages if m.get("role") == "user"]
        if request.get("tool_choice") == "none":
            return Reply(content="I could not read a.txt; stopping here.")
        if len(user) == 2:  # the second task: one read, then the answer
            last = messages[-1]
            return Reply(content="a.txt read again") if last.get("role") == "tool" else Reply(tool_calls=[READ])
        return detouring()(request)

    agent, events, answer = run(start_guarded, responder)
    assert answer == "I could not read a.txt; stopping here."
    before = len(events.events)
    assert agent.run("now read a.txt once more, it changed") == "a.txt read again"
    assert agent.actions[-2:] == ["pass", "pass"] and len(events.events) == before
    assert agent.executions["read_file"] == 5
