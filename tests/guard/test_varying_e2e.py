"""End to end, under the shipped default policy, through a real gateway and the openai SDK
(streamed and not): loops that vary (refusals and exit codes written as text, failures on one
target with varying arguments, fresh ids in the arguments, harness lines in the results,
reworded requests to a sub-agent) are caught; the healthy runs shaped like them run untouched."""

from __future__ import annotations

import json

import pytest
from support.agent import Agent, declare
from support.scripted import DONE, model, prompt_of, steps_of, tools
from support.varying import (
    HEALTHY,
    claude_code_edit_not_found,
    codex_cat,
    codex_failing_command,
    npm_flags,
    openhands_edit_refused,
    refused_edits_between_test_runs,
    reworded_web_agent,
    shell_exit_code_with_think,
    timestamps_in_args,
    url_with_varying_headers,
    uuid_request_ids,
)

from gateway.policy.loader import shipped_policy_path

DEFAULT = shipped_policy_path("default").read_text(encoding="utf-8")


def run(start_guarded, script, stream: bool) -> tuple[Agent, str | None, list[dict]]:
    steps = steps_of(script)
    upstream, client, _ = start_guarded(model(script), DEFAULT)
    agent = Agent(client, tools=tools(script), stream=stream, specs=declare(*sorted({s[0] for s in steps})))
    answer = agent.run(prompt_of(script), max_steps=len(steps) + 4)
    return agent, answer, [r["json"] for r in upstream.requests]


def warned(requests: list[dict]) -> bool:
    return any("[LoopGuard]" in json.dumps(r["messages"][-1:]) for r in requests)


ENDED = {
    # volatile lines in results: Codex's chunk ids, wall times, token counts
    "Codex `cat a.txt`, a new chunk id each time": (codex_cat, 8),
    "Codex `make build` exiting 2": (codex_failing_command, 8),
    # volatile values in arguments
    "a UUID request id in every call": (uuid_request_ids, 8),
    "a timestamp in every call": (timestamps_in_args, 8),
    # failures written as text
    "`Exit code: 1`, think between": (shell_exit_code_with_think, 16),
    "refused edits (each echoing its attempt) between identical test runs": (refused_edits_between_test_runs, 16),
    # failures on one target, arguments varying
    "OpenHands str_replace refused, another old_str each time": (openhands_edit_refused, 9),
    "npm install, another flag each time": (npm_flags, 9),
    "one URL, another User-Agent each time": (url_with_varying_headers, 9),
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("script", "limit"), ENDED.values(), ids=ENDED.keys())
def test_varying_loops_are_warned_then_ended(start_guarded, script, limit, stream):
    agent, answer, requests = run(start_guarded, script(), stream)
    assert answer and answer.startswith("[LoopGuard]") and "stopped" in answer
    assert warned(requests), "the model was warned before it was stopped"
    assert sum(agent.executions.values()) < limit  # the run ended before its last call ran
    if not stream:
        assert "warn" in agent.actions and agent.actions[-1] == "terminate"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "script",
    [claude_code_edit_not_found, lambda: openhands_edit_refused(True)],
    ids=["Claude Code Edit refused on one file, greps between", "OpenHands str_replace refused, views between"],
)
def test_failures_on_one_target_between_reads_are_warned_and_ended_once_the_warning_is_ignored(
    start_guarded, script, stream
):
    # Gathered across reads, the evidence alone only warns; the model carrying on with the
    # warned pattern (the same tool failing on the same file) is what ends the run.
    agent, answer, requests = run(start_guarded, script(), stream)
    assert answer and answer.startswith("[LoopGuard]") and "stopped" in answer
    assert warned(requests)
    assert sum(agent.executions.values()) < len(steps_of(script()))


@pytest.mark.parametrize("stream", [False, True])
def test_reworded_requests_with_the_same_action_line_are_warned(start_guarded, stream):
    agent, _answer, requests = run(start_guarded, reworded_web_agent(), stream)
    assert warned(requests)
    assert any(
        "stagnation" in json.dumps(r["messages"][-1:]) or "nearly the same" in json.dumps(r["messages"][-1:])
        for r in requests
    )
    if not stream:
        assert "warn" in agent.actions


STREAMED_TOO = (
    "a web agent visiting 17 similar pages for 17 items",
    "installing one missing module, then re-running",
    "a hyper-parameter sweep timing out",
    "probing four directions, a long banner each time",
)


@pytest.mark.parametrize(("name", "stream"), [*((n, False) for n in HEALTHY), *((n, True) for n in STREAMED_TOO)])
def test_healthy_look_alikes_run_untouched(start_guarded, name, stream):
    script = HEALTHY[name]()
    agent, answer, requests = run(start_guarded, script, stream)
    assert answer == DONE
    assert sum(agent.executions.values()) == len(steps_of(script))
    assert not any("[LoopGuard" in json.dumps(r) for r in requests)
    if not stream:
        assert set(agent.actions) == {"pass"}
