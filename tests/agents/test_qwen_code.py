"""Qwen Code itself (``qwen -p ... --yolo``) through the gateway with its shipped default policy,
against a scripted OpenAI-compatible model (streamed: the CLI always streams its agent turns).

The same loops and healthy look-alikes as Gemini CLI's (Qwen Code is its fork), in Qwen Code's
vocabulary. Loops are ended within 8 executed calls with exit code 0 and the model's own
tools-closed answer in stdout; healthy runs run every call and never see a gateway text.
Skipped where the CLI is not installed."""

from __future__ import annotations

import pytest
from support.cli_runs import check_ended, check_untouched, error_mode_policy
from support.clis import find_cli
from support.clis_gemini import DONE, FINAL, HEALTHY, LOOPS, SAME_CALL
from support.clis_qwen import run_qwen

pytestmark = pytest.mark.skipif(find_cli("qwen") is None, reason="Qwen Code is not installed")


@pytest.mark.parametrize("scenario", LOOPS, ids=lambda s: s.name)
def test_a_qwen_code_loop_is_ended_with_the_models_answer(scenario, tmp_path):
    outcome = run_qwen(scenario, tmp_path)
    check_ended(outcome, FINAL, outcome.executed, outcome.closed)


@pytest.mark.parametrize("scenario", HEALTHY, ids=lambda s: s.name)
def test_a_healthy_qwen_code_run_runs_every_call_untouched(scenario, tmp_path):
    outcome = run_qwen(scenario, tmp_path)
    check_untouched(outcome, DONE, outcome.executed, scenario.calls, outcome.warned)


def test_error_mode_is_not_retried(tmp_path):
    """With ``terminate.mode: error`` one identical call looped is ended once, and nothing is
    sent again after it: this CLI takes the gateway's error as final, mid-stream (an error
    chunk) or before it (422), shows it (``[API Error: [LoopGuard] ...``) and exits 1."""
    outcome = run_qwen(SAME_CALL, tmp_path, policy=error_mode_policy())
    assert outcome.ended_requests == 1, outcome.story()  # one client request ended, not retried
    assert outcome.closed == 0 and outcome.resent == 0, outcome.story()  # nothing sent again
    assert outcome.returncode == 1, outcome.story()  # an API error ends its run so
    assert "[LoopGuard]" in outcome.stdout + outcome.stderr, outcome.story()  # the user is told
