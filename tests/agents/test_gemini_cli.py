"""Gemini CLI itself (``gemini -p ... --yolo``) through the gateway with its shipped default
policy, against a scripted Gemini model (streamed: the CLI always streams its agent turns).

Loops (each ended within 8 executed calls, exit code 0, the model's own tools-closed answer in
stdout) beside healthy look-alikes (every call of the script runs and no gateway text ever
reaches the model). Skipped where the CLI is not installed."""

from __future__ import annotations

import pytest
from support.cli_runs import check_ended, check_untouched, error_mode_policy
from support.clis import find_cli
from support.clis_gemini import DONE, FINAL, HEALTHY, LOOPS, SAME_CALL, run_gemini

pytestmark = pytest.mark.skipif(find_cli("gemini") is None, reason="Gemini CLI is not installed")


@pytest.mark.parametrize("scenario", LOOPS, ids=lambda s: s.name)
def test_a_gemini_cli_loop_is_ended_with_the_models_answer(scenario, tmp_path):
    outcome = run_gemini(scenario, tmp_path)
    check_ended(outcome, FINAL, outcome.executed, outcome.closed)


@pytest.mark.parametrize("scenario", HEALTHY, ids=lambda s: s.name)
def test_a_healthy_gemini_cli_run_runs_every_call_untouched(scenario, tmp_path):
    outcome = run_gemini(scenario, tmp_path)
    check_untouched(outcome, DONE, outcome.executed, scenario.calls, outcome.warned)


def test_error_mode_is_not_retried(tmp_path):
    """With ``terminate.mode: error`` one identical call looped is ended once, and nothing is
    sent again after it. A 422 before the stream is final for this CLI, but a terminate comes
    mid-stream, where its SDK reads the error event as an empty chunk and the CLI exits 0 without
    a word: its profile ends such runs with the model's answer instead."""
    outcome = run_gemini(SAME_CALL, tmp_path, policy=error_mode_policy())
    assert outcome.ended_requests == 1, outcome.story()  # one client request ended, not retried
    assert outcome.closed == 1, outcome.story()  # the model's answer asked once
    assert outcome.resent <= outcome.closed, outcome.story()  # only the answer's own request
    assert outcome.returncode == 0, outcome.story()
    assert FINAL in outcome.stdout, outcome.story()  # the user is told
