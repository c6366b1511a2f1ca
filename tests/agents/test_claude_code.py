"""Claude Code itself (``claude -p ... --dangerously-skip-permissions``) through the gateway with
its shipped default policy, against a scripted Anthropic model (streamed, and non-streamed through
the CLI's own fallback).

Loops (each ended within 8 executed calls of the pattern, exit code 0, the model's own
tools-closed answer in stdout) beside healthy look-alikes (every call of the script runs and no
gateway text ever reaches the model). Claude Code polls a background job by reading the job's
output file (it has no BashOutput tool any more) and rewrites its ``Bash`` description on every
call: both loops must be warned by the third call and ended within eight. Every run is also
made with each turn answered non-streamed (the CLI's own fallback when a stream breaks).
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
    FAILING_TEST,
    FINAL,
    LONG,
    MAX_EXECUTED,
    MISSING_FILE,
    NOTES,
    OTHER_PROGRAMS,
    PAST_END_SEDS,
    SCROLL_SEDS,
    SWEEP,
    Scenario,
    Turn,
    check_ended,
    check_untouched,
    cycling,
    error_mode_policy,
    failing_test_runs,
    first_then,
    is_tool,
    moving_poll,
    paced_poll,
    scripted,
    status_polls,
    switching,
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


def described(commands: list[str], descriptions: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each command with its own description, as Claude Code's model writes them."""
    return [bash(c, d) for c, d in zip(commands, descriptions, strict=True)]


def _test_commands(turn: Turn):
    return described(
        failing_test_runs(turn.work),
        [
            "Run the test suite",
            "Run tests",
            "Run tests, stop at first failure",
            "Run tests from the project root",
            "Run all tests",
            "Run tests quietly",
            "Run the failing test file",
            "Run pytest in the project",
        ],
    )


def _past_end_reads(turn: Turn):
    return [read(turn.work / "notes.txt", offset=10 + 10 * k, limit=10 + k) for k in range(40)]


def _past_end_seds(turn: Turn):
    return [bash(c, f"Show lines {10 + 10 * k} onwards") for k, c in enumerate(PAST_END_SEDS)]


def _refused_edits(turn: Turn):
    path = turn.work / "calc.py"
    olds = [
        "return a-b",
        "return a -b",
        "return (a - b)",
        "    return a-b",
        "return a - b  # sum",
        "return b - a",
        "return a- b",
        "  return a - b\n",
    ]
    return [edit(path, old, "return a + b") for old in olds]


def _status_polls(turn: Turn):
    return described(
        status_polls(turn.work),
        [
            "Check the job status",
            "Show the latest status",
            "Read the status line",
            "Look at the status",
            "Check status again",
            "Peek at status",
            "Status check",
            "See if the job finished",
        ],
    )


_missing_file = switching(
    [bash(MISSING_FILE, "Show x.txt")],
    described(
        OTHER_PROGRAMS,
        [
            "Show the start of x.txt",
            "Search x.txt for foo",
            "Count lines in x.txt",
            "Show the end of x.txt",
            "Print the first line of x.txt",
            "Number x.txt's lines",
            "Print x.txt's first line",
            "Sort x.txt",
        ],
    ),
)


def _narrated(turn: Turn):
    descriptions = [
        "Show the settings file",
        "Print the settings",
        "Display settings.ini contents",
        "Read the configuration",
        "Check what the settings say",
        "Look at the settings file again",
        "Open the settings",
        "Dump the settings file",
    ]
    return [bash("cat settings.ini", d) for d in descriptions]


# A background job whose output file never gets a new line: Claude Code's own way to look at it
# is Read on the file it named; the model reads it again and again without waiting.
QUIET_JOB = "echo running; while [ ! -f .stop ]; do sleep 0.2; done"
# A background job whose status line carries a new timestamp every time it is looked at.
STAMPING_JOB = 'while [ ! -f .stop ]; do echo "status: running at $(date -u +%Y-%m-%dT%H:%M:%S.%NZ)"; sleep 0.05; done'


def _output_file(turn: Turn) -> str:
    found = re.search(r"Output is being written to: (\S+?\.output)", "\n".join(turn.results))
    assert found, turn.results
    return found.group(1)


def _start(job: str):
    return lambda turn: bash(job, "Start the build in the background", run_in_background=True)


def _read_output(turn: Turn):
    return [read(Path(_output_file(turn)))]


def _tail_output(turn: Turn):
    return [bash(f"tail -n 1 {_output_file(turn)}", "Check on the build")]


def _is_poll(name: str, args: dict[str, Any]) -> bool:
    return not args.get("run_in_background")


LOOPS = [
    Scenario("failing_test_spelled_many_ways", cycling(_test_commands), {"tests/test_total.py": FAILING_TEST}),
    Scenario(
        "read_past_the_end_with_read",
        cycling(_past_end_reads),
        {"notes.txt": NOTES},
        prompt="Read notes.txt to the end.",
    ),
    Scenario(
        "read_past_the_end_with_sed", cycling(_past_end_seds), {"notes.txt": NOTES}, prompt="Read notes.txt to the end."
    ),
    Scenario(
        "refused_edit_retried_with_changes",
        first_then(lambda turn: read(turn.work / "calc.py"), cycling(_refused_edits)),
        {"calc.py": "def add(a, b):\n    return a + b  # fixed\n"},
        counted=is_tool("Edit"),
    ),
    Scenario(
        "poll_spelled_many_ways",
        cycling(_status_polls),
        {"status.txt": "running\n"},
        prompt="Wait for the job to finish.",
    ),
    Scenario("same_missing_file_other_programs", cycling(_missing_file), prompt="What is in x.txt?"),
]
# Loops that must also be warned by the third call.
EARLY_LOOPS = [
    Scenario(
        "background_job_read_without_pause",
        first_then(_start(QUIET_JOB), cycling(_read_output)),
        prompt="Build the project.",
        counted=_is_poll,
    ),
    Scenario(
        "background_job_stamped_status",
        first_then(_start(STAMPING_JOB), cycling(_tail_output)),
        prompt="Build the project.",
        counted=_is_poll,
    ),
    Scenario("same_command_new_description", cycling(_narrated), prompt="What do the settings say?"),
]


def _thirty_reads(turn: Turn):
    return [read(turn.work / f"src/f{n:02d}.txt") for n in range(30)]


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


def _sweep(turn: Turn):
    return [bash(c, f"Count lines in file {n}") for n, c in enumerate(SWEEP, 1)]


def _scroll_read(turn: Turn):
    return [read(turn.work / "long.txt", offset=1 + 40 * k, limit=40) for k in range(5)]


def _scroll_sed(turn: Turn):
    return [bash(c, "Show the next part of the file") for c in SCROLL_SEDS]


HEALTHY = [
    Scenario(
        "thirty_different_files",
        scripted(_thirty_reads),
        {f"src/f{n:02d}.txt": f"file {n}\n" for n in range(30)},
        calls=30,
        prompt="Review every file in src.",
    ),
    Scenario(
        "edit_run_test_until_it_passes", scripted(_edit_run_test), {"calc.py": CALC, "check_calc.py": CHECK}, calls=6
    ),
    Scenario(
        "poll_that_sleeps",
        paced_poll(lambda c: bash(c, "Wait, then check the job status")),
        {"status.txt": "running\n"},
        calls=6,
        prompt="Wait for the job to finish.",
    ),
    Scenario(
        "poll_whose_output_moves",
        moving_poll(lambda c: bash(c, "Check the job's progress")),
        calls=8,
        prompt="Wait for the job to finish.",
    ),
    Scenario(
        "sweep_over_files",
        scripted(_sweep),
        {f"f{n}.txt": "x\n" * n for n in range(1, 13)},
        calls=12,
        prompt="Count the lines of every file.",
    ),
    Scenario("scroll_with_read", scripted(_scroll_read), {"long.txt": LONG}, calls=5, prompt="Read long.txt."),
    Scenario("scroll_with_sed", scripted(_scroll_sed), {"long.txt": LONG}, calls=5, prompt="Read long.txt."),
]


STREAMED = [pytest.param(True, id="streamed"), pytest.param(False, id="not_streamed")]


def _assert_ended(scenario: Scenario, tmp_path: Path, streamed: bool):
    outcome = run_claude(scenario, tmp_path, streamed=streamed)
    check_ended(outcome, FINAL, len(outcome.executed(scenario.counted)), outcome.model.closed)
    return outcome


@pytest.mark.parametrize("streamed", STREAMED)
@pytest.mark.parametrize("scenario", LOOPS, ids=lambda s: s.name)
def test_a_claude_code_loop_is_ended_with_the_models_answer(scenario, streamed, tmp_path):
    _assert_ended(scenario, tmp_path, streamed)


@pytest.mark.parametrize("streamed", STREAMED)
@pytest.mark.parametrize("scenario", EARLY_LOOPS, ids=lambda s: s.name)
def test_a_claude_code_loop_is_warned_by_the_third_call_and_ended(scenario, streamed, tmp_path):
    outcome = _assert_ended(scenario, tmp_path, streamed)
    warned_at = outcome.executed_at_first_warning(scenario.counted)
    assert warned_at is not None and warned_at <= WARNED_BY, outcome.story()


@pytest.mark.parametrize("streamed", STREAMED)
@pytest.mark.parametrize("scenario", HEALTHY, ids=lambda s: s.name)
def test_a_healthy_claude_code_run_runs_every_call_untouched(scenario, streamed, tmp_path):
    outcome = run_claude(scenario, tmp_path, streamed=streamed)
    check_untouched(outcome, DONE, len(outcome.executed()), scenario.calls, outcome.warned)


def test_in_error_mode_claude_code_ends_with_the_models_answer_without_retrying(tmp_path):
    """Claude Code retries an ended streamed request without streaming: its profile has its runs
    end with the model's own answer even where the policy ends runs with an error."""
    stubborn = Scenario("stubborn", lambda turn: bash("cat x.txt", "Show x.txt"), prompt="What is in x.txt?")
    outcome = run_claude(stubborn, tmp_path, policy=error_mode_policy())
    assert outcome.returncode == 0, outcome.story()
    assert FINAL in outcome.stdout, outcome.story()
    assert outcome.ended_requests == 1, outcome.story()
    assert len(outcome.executed()) <= MAX_EXECUTED, outcome.story()
