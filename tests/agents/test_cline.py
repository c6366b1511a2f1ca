"""Cline CLI (the real pinned CLI on Node 22, headless) through a real gateway with the shipped
default policy, in front of a scripted model that loops the way real agents loop.

A loop is ended within 8 executed calls, the CLI exits 0 and prints the model's own tools-closed
answer; its healthy look-alike runs every call of its script with no LoopGuard text ever reaching
the model. Cline's tools take lists and answer with a JSON envelope per element
(``[{"query": ..., "result": ..., "success": true}]``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli_runs import MAX_EXECUTED, error_mode_policy
from support.clis_cline import available, run_cline
from support.clis_copilot import DONE, guarded, numbered, repeating, unguarded, until_done
from support.clis_copilot import workdir as _workdir

pytestmark = pytest.mark.skipif(not available(), reason="Cline CLI or Node 22 is not installed")

LIMIT = MAX_EXECUTED  # executed calls a loop may run before the gateway ends it


def read(path: Path, start: int | None = None, end: int | None = None):
    entry: dict = {"path": str(path)}
    if start is not None:
        entry.update(start_line=start, end_line=end)
    return ("read_files", {"files": [entry]})


def same_read(work: Path, limit: int = 30):
    """``read_files`` of one file, the same every turn."""
    return repeating(read(work / "status.txt"), limit)


def past_the_end(work: Path, limit: int = 20):
    """``read_files`` of a 3-line file with a new range each turn, all past its end (empty)."""
    return numbered(lambda n: read(work / "status.txt", 50 + 10 * n, 59 + 10 * n), limit)


def thirty_reads(work: Path):
    return numbered(lambda n: read(work / f"f{n}.txt"), 30)


def moving_poll(work: Path, limit: int = 30):
    """The same status command until it says ``done`` (at poll 8): its output moves every time."""
    return until_done(("run_commands", {"commands": ["python3 poll.py"]}), limit)


def workdir(tmp_path: Path) -> Path:
    return _workdir(tmp_path, "status: running\nqueue: 3\nowner: ci\n")


@pytest.mark.parametrize("script", [same_read, past_the_end], ids=["same-file", "past-the-end"])
def test_a_read_loop_is_ended_with_the_models_answer(tmp_path, script):
    work = workdir(tmp_path)
    with guarded(script(work), tmp_path) as stack:
        run = run_cline("Watch the status file until the job finishes.", work, tmp_path / "home", stack.url)
    stack.check_ended(run)


@pytest.mark.parametrize(
    "script, calls",
    [
        (thirty_reads, 30),
        (moving_poll, 8),
    ],
    ids=["thirty-different-files", "poll-whose-output-moves"],
)
def test_healthy_look_alikes_run_every_call(tmp_path, script, calls):
    """As many calls run through the gateway as without it. Cline stops a run itself at the 5th
    identical call in a row, whatever the results ("consecutive identical calls"), so its poll
    with the same command ends there with or without the gateway."""
    alone = tmp_path / "alone"
    alone.mkdir()
    with unguarded(script(workdir(alone)), alone) as bare:
        run_cline("Go through the work.", alone / "work", alone / "home", bare.url)
    without = len(bare.model.executed())
    assert without == calls or script is moving_poll, without
    work = workdir(tmp_path)
    with guarded(script(work), tmp_path) as stack:
        run = run_cline("Go through the work.", work, tmp_path / "home", stack.url)
    stack.check_untouched(run, without)
    assert DONE in run.stdout or without < calls


def test_error_mode_is_not_retried(tmp_path):
    """With ``terminate.mode: error`` the CLI gets the gateway's error instead of an answer; it
    must take it as final: one client request terminated, none resent after it."""
    work = workdir(tmp_path)
    with guarded(same_read(work), tmp_path, error_mode_policy()) as stack:
        run = run_cline("Watch the status file until the job finishes.", work, tmp_path / "home", stack.url)
    assert len(stack.model.executed()) <= LIMIT, stack.actions()
    assert len(stack.terminated_requests()) == 1, (stack.actions(), run.stdout[-1500:], run.stderr[-1500:])
    assert "[LoopGuard]" in run.stdout + run.stderr  # the user is told why the run stopped
