"""Gemini CLI itself (``gemini -p ... --yolo``) through the gateway with its shipped default
policy, against a scripted Gemini model (streamed: the CLI always streams its agent turns): the
smoke set, one loop and one healthy run on the Gemini API route (Vertex AI:
test_gemini_cli_vertex.py).

The loop (its read tool past the end of a file, a new range each time) is ended within 8 executed
calls, exit code 0, the model's own tools-closed answer in stdout; the healthy run (run the
check, edit, run again until it passes) runs every call and no gateway text ever reaches the
model. Its other loops and look-alikes, in every recorded version, are replayed from its recorded
traffic (tests/agents/test_recorded*.py). Skipped where the CLI is not installed."""

from __future__ import annotations

import pytest
from support.cli_runs import check_ended, check_untouched
from support.clis import find_cli
from support.clis_gemini import DONE, FINAL, HEALTHY, LOOPS, run_gemini

pytestmark = pytest.mark.skipif(find_cli("gemini") is None, reason="Gemini CLI is not installed")

LOOP = next(s for s in LOOPS if s.name == "read_tool_past_end")
HEALTHY_RUN = next(s for s in HEALTHY if s.name == "edit_run_test_passes")


def test_a_gemini_cli_loop_is_ended_with_the_models_answer(tmp_path):
    outcome = run_gemini(LOOP, tmp_path)
    check_ended(outcome, FINAL, outcome.executed, outcome.closed)


def test_a_healthy_gemini_cli_run_runs_every_call_untouched(tmp_path):
    outcome = run_gemini(HEALTHY_RUN, tmp_path)
    check_untouched(outcome, DONE, outcome.executed, HEALTHY_RUN.calls, outcome.warned)
