"""The classes of loops real agents' recorded sessions showed, and their healthy look-alikes
(tests/support/classes.py), played through a real gateway under the shipped default policy by
an agent loop over the official openai SDK: the scripted model proposes each round's calls, the
tools answer what the recording says. Loops are stopped by the call their case names (the
calls after it never run); healthy runs execute every call and finish."""

from __future__ import annotations

import json

import pytest
from support.agent import Agent, declare
from support.classes import HEALTHY, LOOPS, Case
from support.scripted import DONE, model, prompt_of, steps_of, tools
from support.seen import MARK, observations

from gateway.policy.loader import shipped_policy_path

DEFAULT = shipped_policy_path("default").read_text(encoding="utf-8")
STREAMED = ["refused edits one per round", "a missing file, read tool then programs (Claude Code)"]
STREAMED_HEALTHY = [
    "a batch of edits that fail together, fixed by the next batch",
    "a job growing between streaks of 4 (Bash tail)",
]


def play(start_guarded, case: Case, stream: bool) -> tuple[Agent, str | None, list[dict]]:
    script = case.script()
    upstream, client, _ = start_guarded(model(script), DEFAULT)
    agent = Agent(client, tools=tools(script), stream=stream, specs=declare(*case.speaker.tools))
    agent.messages.append({"role": "system", "content": case.speaker.system})
    answer = agent.run(prompt_of(script), max_steps=len(steps_of(script)) + 4)
    return agent, answer, [r["json"] for r in upstream.requests]


def params(names: list[str], streamed: list[str]) -> list:
    return [pytest.param(n, False, id=n) for n in names] + [
        pytest.param(n, True, id=f"{n} (streamed)") for n in streamed
    ]


def stopped_at(agent: Agent, answer: str | None, requests: list[dict]) -> int | None:
    """The call the gateway first refused (its observation stands in the conversation where the
    call was), or the one it ended the run at; None when it did neither."""
    for request in requests:
        results = [m for m in request["messages"] if m.get("role") == "tool"]
        refused = [i for i, m in enumerate(results, 1) if str(m.get("content", "")).startswith(MARK)]
        if refused:
            return refused[0]
    if answer and answer.startswith("[LoopGuard]"):
        return sum(agent.executions.values()) + 1
    return None


@pytest.mark.parametrize(("name", "stream"), params(list(LOOPS), STREAMED))
def test_a_loop_is_stopped_by_its_call(start_guarded, name, stream):
    case = LOOPS[name]
    agent, answer, requests = play(start_guarded, case, stream)
    assert (stopped_at(agent, answer, requests) or 10**6) <= case.stop_by, answer
    assert any("[LoopGuard]" in json.dumps(r["messages"][-1:]) for r in requests), "warned before it was stopped"


@pytest.mark.parametrize(("name", "stream"), params(list(HEALTHY), STREAMED_HEALTHY))
def test_a_healthy_run_runs_every_call_and_finishes(start_guarded, name, stream):
    case = HEALTHY[name]
    agent, answer, requests = play(start_guarded, case, stream)
    assert answer == DONE
    assert sum(agent.executions.values()) == len(steps_of(case.script()))
    assert not any(observations(r) for r in requests), "a call was refused"
