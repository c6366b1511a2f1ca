"""Qwen Code itself (``qwen -p ... --yolo``) through the gateway with its shipped default policy,
against a scripted OpenAI-compatible model (streamed: the CLI always streams its agent turns).

The same loops and healthy look-alikes as Gemini CLI's (Qwen Code is its fork), in Qwen Code's
vocabulary. Loops are ended within 8 executed calls with exit code 0 and the model's own
tools-closed answer in stdout; healthy runs run every call and never see a gateway text.
Skipped where the CLI is not installed."""

from __future__ import annotations

import pytest
from support.clis import find_cli
from support.clis_gemini import DONE, FINAL, HEALTHY, LOOPS
from support.clis_qwen import run_qwen

pytestmark = pytest.mark.skipif(find_cli("qwen") is None, reason="Qwen Code is not installed")

MAX_EXECUTED = 8


@pytest.mark.parametrize("scenario", LOOPS, ids=lambda s: s.name)
def test_a_qwen_code_loop_is_ended_with_the_models_answer(scenario, tmp_path):
    outcome = run_qwen(scenario, tmp_path)
    assert outcome.returncode == 0, outcome.story()
    assert FINAL in outcome.stdout, outcome.story()
    assert outcome.closed >= 1, outcome.story()  # the answer was asked with tools closed
    assert outcome.executed <= MAX_EXECUTED, outcome.story()


@pytest.mark.parametrize("scenario", HEALTHY, ids=lambda s: s.name)
def test_a_healthy_qwen_code_run_runs_every_call_untouched(scenario, tmp_path):
    outcome = run_qwen(scenario, tmp_path)
    assert outcome.returncode == 0, outcome.story()
    assert DONE in outcome.stdout, outcome.story()
    assert outcome.executed == scenario.calls, outcome.story()
    assert not outcome.warned, outcome.story()
