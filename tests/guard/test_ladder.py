"""The ladder the documentation states (docs/how-it-works.md) is the ladder a client sees: the shipped default policy, a
real agent loop over the openai SDK, and the x-loopguard-action header of each request."""

import re
from pathlib import Path

import pytest
from support.agent import Agent
from support.looping import stubborn
from support.seen import observations
from support.upstream import Reply

from gateway.audit.memory_sink import MemorySink

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")


def documented() -> list[str]:
    """docs/how-it-works.md's "Headers per request, never-changing model: `pass` ..." line."""
    line = next(
        l
        for l in (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8").splitlines()
        if l.startswith("Headers per request, never-changing model:")
    )
    return re.findall(r"`(\w+)`", line)


def test_a_never_changing_model_sees_the_documented_ladder(start_guarded):
    _upstream, client, _ = start_guarded(stubborn(), DEFAULT)
    events = MemorySink()
    client.gateway_app.state.gateway.audit.add(events)
    agent = Agent(client, tools={"read_file": lambda a: "same"})

    agent.run("summarize a.txt", max_steps=20)

    assert agent.actions == documented() == ["pass", "pass", "pass", "warn", "terminate"]
    assert agent.executions["read_file"] == 4
    # Inside the last request: calls 5 and 6 vetoed (each re-ask adds one), call 7 ends the run.
    refused = [(e.action, e.count) for e in events.events if e.phase == "response"]
    assert refused == [("reject", 5), ("reject", 6), ("terminate", 7)]


@pytest.mark.parametrize("stream", [False, True])
def test_a_model_that_changes_course_sees_reject(start_guarded, stream):
    def model(request):
        if request["messages"][-1].get("content") == "a.txt b.txt":
            return Reply(content="done: listed the folder")
        if observations(request):  # it read the veto: another approach
            return Reply(tool_calls=[("list_dir", '{"path": "."}')])
        return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])

    _upstream, client, _ = start_guarded(model, DEFAULT)
    events = MemorySink()
    client.gateway_app.state.gateway.audit.add(events)
    agent = Agent(client, tools={"read_file": lambda a: "same", "list_dir": lambda a: "a.txt b.txt"}, stream=stream)

    assert agent.run("look around") == "done: listed the folder"
    assert agent.executions == {"read_file": 4, "list_dir": 1}
    assert [(e.action, e.count) for e in events.events if e.phase == "response"] == [("reject", 5)]
    if not stream:  # a stream's headers go out before the call is judged: its veto is an SSE comment
        assert agent.actions == ["pass", "pass", "pass", "warn", "reject", "pass"]
