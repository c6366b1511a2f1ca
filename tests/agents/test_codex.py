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
from support.clis import find_cli
from support.clis_claude import DONE, FINAL, Scenario, Turn, error_mode_policy
from support.clis_codex import run_codex

pytestmark = pytest.mark.skipif(find_cli("codex") is None, reason="Codex CLI is not installed")

MAX_EXECUTED = 8
FAILING_TEST = "def test_total():\n    assert 2 + 2 == 5\n"
NOTES = "first\nsecond\nthird\n"
LONG = "".join(f"line {n}: the quick brown fox {n * 7}\n" for n in range(1, 201))


def sh(command: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return "exec_command", {"cmd": command, **more}


def patch(path: str, old: str, new: str) -> tuple[str, str]:
    return "apply_patch", f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"


def is_tool(*names: str):
    return lambda name, args: name in names


def cycling(make):
    """A loop: the model's call number ``index`` is ``make(turn)[index % len]``, forever."""
    def step(turn: Turn):
        calls = make(turn)
        return calls[turn.index % len(calls)]
    return step


def scripted(make):
    """A healthy run: the calls of ``make(turn)`` in order, then the model is done."""
    def step(turn: Turn):
        calls = make(turn)
        return calls[turn.index] if turn.index < len(calls) else None
    return step


def _test_commands(turn: Turn):
    w = turn.work
    return [sh("python -m pytest tests -q"), sh("pytest tests/"), sh("python3 -m pytest -x tests"),
            sh(f"cd {w} && pytest tests"), sh("python -m pytest tests"), sh("pytest -q tests"),
            sh("python -m pytest tests/test_total.py"), sh(f"cd {w} && python -m pytest -q")]


def _past_end_seds(turn: Turn):
    return [sh(f"sed -n '{10 + 10 * k},{19 + 10 * k}p' notes.txt") for k in range(40)]


def _refused_patches(turn: Turn):
    olds = ["    return a-b", "    return a -b", "    return (a - b)", "  return a - b", "    return a - b  # sum",
            "    return b - a", "    return a- b", "\treturn a - b"]
    return [patch("calc.py", old, "    return a + b") for old in olds]


def _status_polls(turn: Turn):
    return [sh("cat status.txt"), sh("tail -1 status.txt"), sh("tail -n 1 ./status.txt"), sh("head status.txt"),
            sh(f"cat {turn.work}/status.txt"), sh("head -n 1 status.txt"), sh("tail -n1 status.txt"),
            sh("cat ./status.txt")]


def _missing_file(turn: Turn):
    if not turn.warned:
        return [sh("cat x.txt")]
    return [sh("head x.txt"), sh("grep foo x.txt"), sh("wc -l x.txt"), sh("tail x.txt"), sh("sed -n 1p x.txt"),
            sh("nl x.txt"), sh("awk 'NR==1' x.txt"), sh("sort x.txt")]


LOOPS = [
    Scenario("failing_test_spelled_many_ways", cycling(_test_commands), {"tests/test_total.py": FAILING_TEST}),
    Scenario("read_past_the_end_with_sed", cycling(_past_end_seds), {"notes.txt": NOTES},
             prompt="Read notes.txt to the end."),
    Scenario("refused_patch_retried_with_changes", cycling(_refused_patches),
             {"calc.py": "def add(a, b):\n    return a + b  # fixed\n"}, counted=is_tool("apply_patch")),
    Scenario("poll_spelled_many_ways", cycling(_status_polls), {"status.txt": "running\n"},
             prompt="Wait for the job to finish."),
    Scenario("same_missing_file_other_programs", cycling(_missing_file), prompt="What is in x.txt?"),
]


def _thirty_reads(turn: Turn):
    return [sh(f"cat src/f{n:02d}.txt") for n in range(30)]


CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a ** b\n"
CHECK = ("import sys\nfrom calc import add, mul\nbad = [n for n, ok in (('add', add(2, 3) == 5), "
         "('mul', mul(2, 3) == 6)) if not ok]\nprint('failing: ' + ', '.join(bad) if bad else 'all passed')\n"
         "sys.exit(1 if bad else 0)\n")


def _edit_run_test(turn: Turn):
    return [sh("cat calc.py"), sh("python check_calc.py"), patch("calc.py", "    return a - b", "    return a + b"),
            sh("python check_calc.py"), patch("calc.py", "    return a ** b", "    return a * b"),
            sh("python check_calc.py")]


def _paced_poll(turn: Turn):
    """Polls every second; the job is done by the sixth look, and the model stops when it says so."""
    if "done" in turn.last:
        return None
    if turn.index == 5:
        (turn.work / "status.txt").write_text("done\n")
    return sh("sleep 1 && cat status.txt")


def _moving_poll(turn: Turn):
    """The job's progress moves on between two looks; done at the eighth."""
    if "done" in turn.last:
        return None
    progress = "done: 8 of 8 steps\n" if turn.index == 7 else f"running: {turn.index + 1} of 8 steps\n"
    (turn.work / "progress.txt").write_text(progress)
    return sh("cat progress.txt")


def _sweep(turn: Turn):
    return [sh(f"wc -l f{n}.txt") for n in range(1, 13)]


def _scroll_sed(turn: Turn):
    return [sh(f"sed -n '{1 + 40 * k},{40 + 40 * k}p' long.txt") for k in range(5)]


HEALTHY = [
    Scenario("thirty_different_files", scripted(_thirty_reads),
             {f"src/f{n:02d}.txt": f"file {n}\n" for n in range(30)}, calls=30, prompt="Review every file in src."),
    Scenario("edit_run_test_until_it_passes", scripted(_edit_run_test), {"calc.py": CALC, "check_calc.py": CHECK},
             calls=6),
    Scenario("poll_that_sleeps", _paced_poll, {"status.txt": "running\n"}, calls=6,
             prompt="Wait for the job to finish."),
    Scenario("poll_whose_output_moves", _moving_poll, calls=8, prompt="Wait for the job to finish."),
    Scenario("sweep_over_files", scripted(_sweep), {f"f{n}.txt": "x\n" * n for n in range(1, 13)}, calls=12,
             prompt="Count the lines of every file."),
    Scenario("scroll_with_sed", scripted(_scroll_sed), {"long.txt": LONG}, calls=5, prompt="Read long.txt."),
]


@pytest.mark.parametrize("scenario", LOOPS, ids=lambda s: s.name)
def test_a_codex_loop_is_ended_with_the_models_answer(scenario, tmp_path):
    outcome = run_codex(scenario, tmp_path)
    assert outcome.returncode == 0, outcome.story()
    assert FINAL in outcome.stdout, outcome.story()
    assert outcome.model.closed >= 1, outcome.story()  # the answer was asked with tools closed
    assert len(outcome.executed(scenario.counted)) <= MAX_EXECUTED, outcome.story()


@pytest.mark.parametrize("scenario", HEALTHY, ids=lambda s: s.name)
def test_a_healthy_codex_run_runs_every_call_untouched(scenario, tmp_path):
    outcome = run_codex(scenario, tmp_path)
    assert outcome.returncode == 0, outcome.story()
    assert DONE in outcome.stdout, outcome.story()
    assert len(outcome.executed()) == scenario.calls, outcome.story()
    assert not outcome.warned, outcome.story()


def test_in_error_mode_codex_takes_the_gateways_error_as_final(tmp_path):
    """Codex takes the gateway's failed response (``response.failed`` mid-stream) as the end of
    the run: it shows the gateway's text and exits, asking no more."""
    stubborn = Scenario("stubborn", lambda turn: sh("cat x.txt"), prompt="What is in x.txt?")
    outcome = run_codex(stubborn, tmp_path, policy=error_mode_policy())
    assert outcome.returncode != 0, outcome.story()
    assert "[LoopGuard]" in outcome.stderr, outcome.story()
    assert outcome.ended_requests == 1, outcome.story()
    assert len(outcome.executed()) <= MAX_EXECUTED, outcome.story()
