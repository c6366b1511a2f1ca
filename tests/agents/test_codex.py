"""Codex CLI itself (``codex exec``, full auto) through the gateway with its shipped default
policy, against a scripted OpenAI Responses model (streamed: the CLI always streams).

Codex has no read tool: it reads with ``exec_command`` (``sed -n``, ``cat``), edits with the
freeform ``apply_patch`` tool, and polls a running command with ``write_stdin``. Loops (each
ended within 8 executed calls of the pattern, exit code 0, the model's own tools-closed answer
in stdout) beside healthy look-alikes (every call of the script runs and no gateway text ever
reaches the model). Skipped where the CLI is not installed."""

from __future__ import annotations

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
    is_tool,
    moving_poll,
    paced_poll,
    scripted,
    status_polls,
    switching,
)
from support.clis import find_cli
from support.clis_codex import run_codex

pytestmark = pytest.mark.skipif(find_cli("codex") is None, reason="Codex CLI is not installed")


def sh(command: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return "exec_command", {"cmd": command, **more}


def patch(path: str, old: str, new: str) -> tuple[str, str]:
    return "apply_patch", f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"


def _refused_patches(turn: Turn):
    olds = [
        "    return a-b",
        "    return a -b",
        "    return (a - b)",
        "  return a - b",
        "    return a - b  # sum",
        "    return b - a",
        "    return a- b",
        "\treturn a - b",
    ]
    return [patch("calc.py", old, "    return a + b") for old in olds]


LOOPS = [
    Scenario(
        "failing_test_spelled_many_ways",
        cycling(lambda turn: [sh(c) for c in failing_test_runs(turn.work)]),
        {"tests/test_total.py": FAILING_TEST},
    ),
    Scenario(
        "read_past_the_end_with_sed",
        cycling(lambda turn: [sh(c) for c in PAST_END_SEDS]),
        {"notes.txt": NOTES},
        prompt="Read notes.txt to the end.",
    ),
    Scenario(
        "refused_patch_retried_with_changes",
        cycling(_refused_patches),
        {"calc.py": "def add(a, b):\n    return a + b  # fixed\n"},
        counted=is_tool("apply_patch"),
    ),
    Scenario(
        "poll_spelled_many_ways",
        cycling(lambda turn: [sh(c) for c in status_polls(turn.work)]),
        {"status.txt": "running\n"},
        prompt="Wait for the job to finish.",
    ),
    Scenario(
        "same_missing_file_other_programs",
        cycling(switching([sh(MISSING_FILE)], [sh(c) for c in OTHER_PROGRAMS])),
        prompt="What is in x.txt?",
    ),
]


def _edit_run_test(turn: Turn):
    return [
        sh("cat calc.py"),
        sh("python check_calc.py"),
        patch("calc.py", "    return a - b", "    return a + b"),
        sh("python check_calc.py"),
        patch("calc.py", "    return a ** b", "    return a * b"),
        sh("python check_calc.py"),
    ]


HEALTHY = [
    Scenario(
        "thirty_different_files",
        scripted(lambda turn: [sh(f"cat src/f{n:02d}.txt") for n in range(30)]),
        {f"src/f{n:02d}.txt": f"file {n}\n" for n in range(30)},
        calls=30,
        prompt="Review every file in src.",
    ),
    Scenario(
        "edit_run_test_until_it_passes", scripted(_edit_run_test), {"calc.py": CALC, "check_calc.py": CHECK}, calls=6
    ),
    Scenario(
        "poll_that_sleeps", paced_poll(sh), {"status.txt": "running\n"}, calls=6, prompt="Wait for the job to finish."
    ),
    Scenario("poll_whose_output_moves", moving_poll(sh), calls=8, prompt="Wait for the job to finish."),
    Scenario(
        "sweep_over_files",
        scripted(lambda turn: [sh(c) for c in SWEEP]),
        {f"f{n}.txt": "x\n" * n for n in range(1, 13)},
        calls=12,
        prompt="Count the lines of every file.",
    ),
    Scenario(
        "scroll_with_sed",
        scripted(lambda turn: [sh(c) for c in SCROLL_SEDS]),
        {"long.txt": LONG},
        calls=5,
        prompt="Read long.txt.",
    ),
]


@pytest.mark.parametrize("scenario", LOOPS, ids=lambda s: s.name)
def test_a_codex_loop_is_ended_with_the_models_answer(scenario, tmp_path):
    outcome = run_codex(scenario, tmp_path)
    check_ended(outcome, FINAL, len(outcome.executed(scenario.counted)), outcome.model.closed)


@pytest.mark.parametrize("scenario", HEALTHY, ids=lambda s: s.name)
def test_a_healthy_codex_run_runs_every_call_untouched(scenario, tmp_path):
    outcome = run_codex(scenario, tmp_path)
    check_untouched(outcome, DONE, len(outcome.executed()), scenario.calls, outcome.warned)


def test_in_error_mode_codex_takes_the_gateways_error_as_final(tmp_path):
    """Codex takes the gateway's failed response (``response.failed`` mid-stream) as the end of
    the run: it shows the gateway's text and exits, asking no more."""
    stubborn = Scenario("stubborn", lambda turn: sh("cat x.txt"), prompt="What is in x.txt?")
    outcome = run_codex(stubborn, tmp_path, policy=error_mode_policy())
    assert outcome.returncode != 0, outcome.story()
    assert "[LoopGuard]" in outcome.stderr, outcome.story()
    assert outcome.ended_requests == 1, outcome.story()
    assert len(outcome.executed()) <= MAX_EXECUTED, outcome.story()
