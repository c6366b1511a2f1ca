"""Cline CLI (the real pinned CLI on Node 22, headless) through a real gateway with the shipped
default policy, in front of a scripted chat-completions model: the smoke set, one loop and one
healthy run.

The loop (``read_files`` of one file with a new range each turn, all past its end) is ended
within 8 executed calls, the CLI exits 0 and prints the model's own tools-closed answer; the
healthy run (twelve different files read) runs every call with no LoopGuard text ever reaching
the model. Cline's tools take lists and answer with a JSON envelope per element
(``[{"query": ..., "result": ..., "success": true}]``). Its other loops and look-alikes, in every
recorded version (before 3.0 too: XML tags in its text), are replayed from its recorded traffic
(tests/agents/test_recorded*.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.clis_cline import available, run_cline
from support.clis_copilot import DONE, guarded, numbered
from support.clis_copilot import workdir as _workdir

pytestmark = pytest.mark.skipif(not available(), reason="Cline CLI or Node 22 is not installed")


def read(path: Path, start: int | None = None, end: int | None = None):
    entry: dict = {"path": str(path)}
    if start is not None:
        entry.update(start_line=start, end_line=end)
    return ("read_files", {"files": [entry]})


def workdir(tmp_path: Path) -> Path:
    return _workdir(tmp_path, "status: running\nqueue: 3\nowner: ci\n")


def test_a_read_past_the_end_loop_is_ended_with_the_models_answer(tmp_path):
    work = workdir(tmp_path)
    past_the_end = numbered(lambda n: read(work / "status.txt", 50 + 10 * n, 59 + 10 * n), 20)
    with guarded(past_the_end, tmp_path) as stack:
        run = run_cline("Watch the status file until the job finishes.", work, tmp_path / "home", stack.url)
    stack.check_ended(run)


def test_twelve_different_files_read_run_every_call(tmp_path):
    work = workdir(tmp_path)
    with guarded(numbered(lambda n: read(work / f"f{n}.txt"), 12), tmp_path) as stack:
        run = run_cline("Go through the work.", work, tmp_path / "home", stack.url)
    stack.check_untouched(run, 12)
    assert DONE in run.stdout
