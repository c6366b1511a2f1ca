"""Gemini CLI itself (``gemini -p ... --yolo``) through the gateway with its shipped default
policy, against a scripted Gemini model (streamed: the CLI always streams its agent turns).

Loops (each ended within 8 executed calls, exit code 0, the model's own tools-closed answer in
stdout) beside healthy look-alikes (every call of the script runs and no gateway text ever
reaches the model). Skipped where the CLI is not installed."""

from __future__ import annotations

import pytest
from support.clis import find_cli
from support.clis_gemini import DONE, FINAL, HEALTHY, LOOPS, run_gemini

pytestmark = pytest.mark.skipif(find_cli("gemini") is None, reason="Gemini CLI is not installed")

MAX_EXECUTED = 8


@pytest.mark.parametrize("scenario", LOOPS, ids=lambda s: s.name)
def test_a_gemini_cli_loop_is_ended_with_the_models_answer(scenario, tmp_path):
    outcome = run_gemini(scenario, tmp_path)
    assert outcome.returncode == 0, outcome.story()
    assert FINAL in outcome.stdout, outcome.story()
    assert outcome.closed >= 1, outcome.story()  # the answer was asked with tools closed
    assert outcome.executed <= MAX_EXECUTED, outcome.story()


@pytest.mark.parametrize("scenario", HEALTHY, ids=lambda s: s.name)
def test_a_healthy_gemini_cli_run_runs_every_call_untouched(scenario, tmp_path):
    outcome = run_gemini(scenario, tmp_path)
    assert outcome.returncode == 0, outcome.story()
    assert DONE in outcome.stdout, outcome.story()
    assert outcome.executed == scenario.calls, outcome.story()
    assert not outcome.warned, outcome.story()
