"""End to end: an agent that compacts its context and carries on looping (the post-compaction guard).

A real agent loop, a stubborn model and the real gateway: after the agent summarizes its
history, the same (tool, args, result) 3 times in the next 3 calls ends the run with
compaction_loop_persisted, even with every other detector switched off.
"""

import itertools

import pytest
from support.agent import Agent
from support.looping import stubborn

from gateway.detectors import REGISTRY

ONLY_COMPACTION = "version: 1\nname: only-compaction\ndetectors:\n" + "".join(
    f"  {name}: false\n" for name in REGISTRY if name != "post_compaction"
)


def keep_task(agent: Agent) -> None:
    """Keep the system prompt and the task, drop the rest (the fingerprint session survives)."""
    agent.messages = agent.messages[:2]


def drop_all(agent: Agent) -> None:
    """Replace everything with the summary: only an explicit session id can follow this."""
    agent.messages = []


def run_with_compaction(
    start_guarded, result, policy=ONLY_COMPACTION, compact=keep_task, stream=False, headers=None, compactions=1
):
    upstream, client, _ = start_guarded(stubborn(), policy)
    agent = Agent(client, tools={"read_file": result}, stream=stream, headers=headers or {})
    agent.messages.append({"role": "system", "content": "You are a coding agent."})
    assert agent.run("summarize a.txt", max_steps=4) is None  # looping, unbothered so far
    answer = None
    for _ in range(compactions):
        compact(agent)
        answer = agent.run("Summary of the work so far: a.txt was read several times. Continue.", max_steps=6)
    return upstream, agent, answer


@pytest.mark.parametrize("stream", [False, True])
def test_a_loop_that_survives_compaction_is_terminated(start_guarded, stream):
    upstream, agent, answer = run_with_compaction(start_guarded, lambda a: "contents of a.txt", stream=stream)
    # 4 calls before the compaction, 3 identical ones after it, then the run ends.
    assert agent.executions["read_file"] == 7
    assert agent.finish_reasons[-1] == "stop"
    assert answer and "compaction_loop_persisted" in answer
    assert "`read_file`" in answer and "3 times" in answer
    # The terminating request went upstream only as the closed-tools request for a final answer;
    # this model still calls its tool there, so the template ends the run.
    assert len(upstream.requests) == 4 + 3 + 1
    assert upstream.requests[-1]["json"]["tool_choice"] == "none"
    if not stream:
        assert agent.actions == ["pass"] * 7 + ["terminate"]


def test_with_an_explicit_session_a_full_summary_is_followed_too(start_guarded):
    headers = {"x-loopguard-session": "agent-42"}
    _, agent, answer = run_with_compaction(start_guarded, lambda a: "same", compact=drop_all, headers=headers)
    assert answer and "compaction_loop_persisted" in answer and agent.executions["read_file"] == 7


def test_without_a_session_id_a_full_summary_starts_a_new_session(start_guarded):
    # The fingerprint (system prompt, first user message, tools) changed with the summary:
    # the gateway cannot tell this is the same agent, so the guard is not armed.
    _, agent, answer = run_with_compaction(start_guarded, lambda a: "same", compact=drop_all)
    assert answer is None and agent.executions["read_file"] == 10


def test_results_that_keep_changing_are_not_a_persisting_loop(start_guarded):
    counter = itertools.count()
    _, agent, answer = run_with_compaction(start_guarded, lambda a: f"line {next(counter)}")
    assert answer is None and agent.executions["read_file"] == 10
    assert "terminate" not in agent.actions


def test_without_a_compaction_the_guard_stays_off(start_guarded):
    _, client, _ = start_guarded(stubborn(), ONLY_COMPACTION)
    agent = Agent(client, tools={"read_file": lambda a: "same"})
    assert agent.run("summarize a.txt", max_steps=12) is None
    assert agent.executions["read_file"] == 12 and set(agent.actions) == {"pass"}


def test_the_master_switch_false_turns_the_guard_off(start_guarded):
    _, agent, answer = run_with_compaction(start_guarded, lambda a: "same", policy="version: 1\nenabled: false\n")
    assert answer is None and agent.executions["read_file"] == 10
    assert set(agent.actions) == {"pass"}


def test_each_compaction_re_arms_the_guard(start_guarded):
    # Two calls after the first compaction (the agent compacts again before a third), then the
    # loop persists after the second compaction: counted afresh from there.
    _, client, _ = start_guarded(stubborn(), ONLY_COMPACTION)
    agent = Agent(client, tools={"read_file": lambda a: "same"})
    agent.messages.append({"role": "system", "content": "You are a coding agent."})
    agent.run("summarize a.txt", max_steps=4)
    keep_task(agent)
    assert agent.run("Summary 1. Continue.", max_steps=2) is None
    keep_task(agent)
    answer = agent.run("Summary 2. Continue.", max_steps=6)
    assert answer and "compaction_loop_persisted" in answer
    assert agent.executions["read_file"] == 4 + 2 + 3
