"""The loops and healthy look-alikes of tests/support/clis_scenarios.py as each CLI really ran
them (its recorded traffic, tests/fixtures/agents/*/*.scenarios.json), sent request by request to
a real gateway with the shipped default policy, without starting the CLI.

A loop is warned, then stopped (rejected or ended) within ``MAX_EXECUTED`` of its calls; a
healthy run goes through untouched, request after request. What the CLIs do with the gateway's
answers (the model's final answer printed, a refused call shown to the model) is what their
smoke tests check with the CLI itself (tests/agents/test_<cli>.py).
"""

from __future__ import annotations

import pytest
from support.cli_runs import MAX_EXECUTED, default_policy
from support.clis_scenarios import SCENARIOS
from support.recorded import ScenarioRun, scenario_runs
from support.recorded_gateway import Replayer, replaying

RUNS = scenario_runs()
PLANNED = {s.name: len(s.steps) for s in SCENARIOS}  # the calls a run's script had
SETUP = {s.name: s.setup for s in SCENARIOS}  # its leading calls that are no part of the loop
STOPPED = ("reject", "terminate")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with replaying(tmp_path_factory.mktemp("scenarios"), default_policy()) as replayer:
        yield replayer


def actions(replayer: Replayer, run: ScenarioRun) -> list[str]:
    """What the gateway did to each exchange of the run: the request after 1, 2, ... rounds and
    the model's next call (the last: its answer)."""
    answered = replayer.run(run.recording, run.rounds)
    assert {a.profile for a in answered} == {run.recording.client}
    return [a.action for a in answered]


@pytest.mark.parametrize("run", [r for r in RUNS if r.loop], ids=lambda r: r.id)
def test_a_recorded_loop_is_warned_then_stopped(gateway, run):
    """Stopped within ``MAX_EXECUTED`` calls; a CLI that ended the loop itself sooner (Qwen Code
    at the 5th call identical to the letter) was at least warned before."""
    setup = SETUP[run.name]
    done = actions(gateway, run)[setup:]
    stopped = next((k for k, a in enumerate(done) if a in STOPPED), None)
    if stopped is None and len(run.rounds) - setup < min(PLANNED[run.name] - setup, MAX_EXECUTED):
        assert "warn" in done, done
        return
    assert stopped is not None and stopped < MAX_EXECUTED, done
    assert "warn" in done[:stopped], done


@pytest.mark.parametrize("run", [r for r in RUNS if not r.loop and not r.stuck], ids=lambda r: r.id)
def test_a_recorded_healthy_run_goes_through_untouched(gateway, run):
    assert actions(gateway, run) == ["pass"] * len(run.rounds)


@pytest.mark.parametrize("run", [r for r in RUNS if r.stuck], ids=lambda r: r.id)
def test_a_healthy_script_that_got_stuck_is_warned_never_stopped(gateway, run):
    """A run scripted as healthy whose recording went otherwise (``ScenarioRun.stuck``): the
    same failure after every fix is worth a warning, never a stop."""
    done = actions(gateway, run)
    assert "warn" in done and not set(done) & set(STOPPED), done


def test_every_cli_ran_every_scenario():
    ran: dict[str, set[str]] = {}
    for run in RUNS:
        ran.setdefault(run.recording.client, set()).add(run.name)
    every = set(PLANNED)
    npm = ("claude_code", "codex", "gemini_cli", "qwen_code", "copilot_cli", "cline")
    assert {c: ran.get(c) == every for c in npm} == dict.fromkeys(npm, True), ran
