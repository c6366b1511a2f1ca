"""Claude Code itself (``claude -p ... --dangerously-skip-permissions``) through the gateway with
its shipped default policy, against a scripted Anthropic model (streamed): the smoke set, one
loop and one healthy run on the Anthropic route (Bedrock and Vertex: test_claude_code_*.py).

The loop: a background job whose output file never changes, read again and again without a pause
(Claude Code 2.1 has no BashOutput: it polls with Read on the file the job named). It is warned by
the third read and ended within eight, the CLI exits 0 with the model's own tools-closed answer.
The healthy run (read, run the check, edit, run again until it passes) runs every call with no
gateway text ever reaching the model. Claude Code's other loops and look-alikes, in every
recorded version, are replayed from its recorded traffic (tests/agents/test_recorded*.py).
Skipped where the CLI is not installed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support.cli_runs import (
    CALC,
    CHECK,
    DONE,
    FINAL,
    Scenario,
    Turn,
    check_ended,
    check_untouched,
    cycling,
    first_then,
    scripted,
)
from support.clis import find_cli
from support.clis_claude import run_claude

pytestmark = pytest.mark.skipif(find_cli("claude") is None, reason="Claude Code is not installed")

WARNED_BY = 3


def bash(command: str, description: str = "Run a command", **more: Any) -> tuple[str, dict[str, Any]]:
    return "Bash", {"command": command, "description": description, **more}


def read(path: Path, **more: Any) -> tuple[str, dict[str, Any]]:
    return "Read", {"file_path": str(path), **more}


def edit(path: Path, old: str, new: str) -> tuple[str, dict[str, Any]]:
    return "Edit", {"file_path": str(path), "old_string": old, "new_string": new}


# A background job whose output file never gets a new line: Claude Code's own way to look at it
# is Read on the file it named; the model reads it again and again without waiting.
QUIET_JOB = "echo running; while [ ! -f .stop ]; do sleep 0.2; done"


def _output_file(turn: Turn) -> str:
    found = re.search(r"Output is being written to: (\S+?\.output)", "\n".join(turn.results))
    assert found, turn.results
    return found.group(1)


def _start(job: str):
    return lambda turn: bash(job, "Start the build in the background", run_in_background=True)


def _read_output(turn: Turn):
    return [read(Path(_output_file(turn)))]


def _is_poll(name: str, args: dict[str, Any]) -> bool:
    return not args.get("run_in_background")


LOOP = Scenario(
    "background_job_read_without_pause",
    first_then(_start(QUIET_JOB), cycling(_read_output)),
    prompt="Build the project.",
    counted=_is_poll,
)


def _edit_run_test(turn: Turn):
    calc = turn.work / "calc.py"
    return [
        read(calc),
        bash("python check_calc.py", "Run the checks"),
        edit(calc, "return a - b", "return a + b"),
        bash("python check_calc.py", "Run the checks again"),
        edit(calc, "return a ** b", "return a * b"),
        bash("python check_calc.py", "Run the checks once more"),
    ]


HEALTHY = Scenario(
    "edit_run_test_until_it_passes", scripted(_edit_run_test), {"calc.py": CALC, "check_calc.py": CHECK}, calls=6
)


def test_a_claude_code_loop_is_warned_by_the_third_call_and_ended(tmp_path):
    outcome = run_claude(LOOP, tmp_path)
    check_ended(outcome, FINAL, len(outcome.executed(LOOP.counted)), outcome.model.closed)
    warned_at = outcome.executed_at_first_warning(LOOP.counted)
    assert warned_at is not None and warned_at <= WARNED_BY, outcome.story()


def test_a_healthy_claude_code_run_runs_every_call_untouched(tmp_path):
    outcome = run_claude(HEALTHY, tmp_path)
    check_untouched(outcome, DONE, len(outcome.executed()), HEALTHY.calls, outcome.warned)
