"""GitHub Copilot CLI (the real pinned CLI, headless) through a real gateway with the shipped
default policy, in front of a scripted chat-completions model (streamed): the smoke set, one loop
and one healthy run.

The loop (one ``bash`` command, byte for byte the same, whose result carries a counter that
changes every call: ``<shellId: N completed ...>``) is ended within 8 executed calls, the CLI
exits 0 and prints the model's own tools-closed answer; the healthy run (a poll whose output moves
every time, done at the 8th) runs every call with no LoopGuard text ever reaching the model. Its
other loops and look-alikes, in every recorded version, are replayed from its recorded traffic
(tests/agents/test_recorded*.py)."""

from __future__ import annotations

import pytest
from support.clis import find_cli
from support.clis_copilot import DONE, guarded, repeating, run_copilot, until_done, workdir

pytestmark = pytest.mark.skipif(find_cli("copilot") is None, reason="GitHub Copilot CLI is not installed")

SAME_COMMAND = ("bash", {"command": "cat status.txt", "description": "Check the job status"})
MOVING_POLL = ("bash", {"command": "python3 poll.py", "description": "Poll the job"})  # done at poll 8


def test_one_bash_command_repeated_is_ended_with_the_models_answer(tmp_path):
    work = workdir(tmp_path, "running\n")
    with guarded(repeating(SAME_COMMAND, 30), tmp_path) as stack:
        run = run_copilot("Check the job status until it finishes.", work, tmp_path / "home", stack.url)
    stack.check_ended(run)


def test_a_poll_whose_output_moves_runs_every_call(tmp_path):
    work = workdir(tmp_path, "running\n")
    with guarded(until_done(MOVING_POLL, 30), tmp_path) as stack:
        run = run_copilot("Wait for the job.", work, tmp_path / "home", stack.url)
    stack.check_untouched(run, 8)
    assert DONE in run.stdout
