"""GitHub Copilot CLI (the real pinned CLI, headless) through a real gateway with the shipped
default policy, in front of a scripted model that loops the way real agents loop.

A loop is ended within 8 executed calls, the CLI exits 0 and prints the model's own tools-closed
answer; its healthy look-alike runs every call of its script with no LoopGuard text ever reaching
the model. Copilot's ``bash`` results carry a counter (``<shellId: N completed ...>``) and its
``view`` of a missing path is a plain text without an error flag: both must still be read as
what they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli_runs import MAX_EXECUTED, error_mode_policy
from support.clis import find_cli
from support.clis_copilot import DONE, FINAL, guarded, numbered, repeating, run_copilot, until_done
from support.clis_copilot import workdir as _workdir

pytestmark = pytest.mark.skipif(find_cli("copilot") is None, reason="GitHub Copilot CLI is not installed")

LIMIT = MAX_EXECUTED  # executed calls a loop may run before the gateway ends it


def same_command(limit: int = 30):
    """One ``bash`` command, byte for byte the same, every turn (issue: counters in results)."""
    return repeating(("bash", {"command": "cat status.txt", "description": "Check the job status"}), limit)


def same_view(work: Path, limit: int = 30):
    """``view`` of one file, the same every turn."""
    return repeating(("view", {"path": str(work / "status.txt")}), limit)


GUESSES = [
    "config.yaml",
    "config.yml",
    "conf/config.yaml",
    "settings.json",
    "app.toml",
    "config/app.yaml",
    ".env",
    "settings.ini",
    "etc/app.conf",
    "config.json",
    "conf.d/main.yaml",
    "app.config",
]


def missing_views(work: Path, limit: int = len(GUESSES)):
    """``view`` of a new guessed path every turn, none there: each answer is "Path X does not
    exist" (numbered paths would be a batch over items, which the gateway leaves alone)."""
    return numbered(lambda n: ("view", {"path": str(work / GUESSES[n])}), limit)


def thirty_views(work: Path):
    return numbered(lambda n: ("view", {"path": str(work / f"f{n}.txt")}), 30)


def moving_poll(limit: int = 30):
    """The same status command until it says ``done`` (at poll 8): its output moves every time."""
    return until_done(("bash", {"command": "python3 poll.py", "description": "Poll the job"}), limit)


def workdir(tmp_path: Path) -> Path:
    return _workdir(tmp_path, "running\n")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_one_bash_command_repeated_is_ended_with_the_models_answer(tmp_path, stream):
    work = workdir(tmp_path)
    with guarded(same_command(), tmp_path) as stack:
        run = run_copilot("Check the job status until it finishes.", work, tmp_path / "home", stack.url, stream)
    stack.check_ended(run)
    assert all(bool(body.get("stream")) is stream for body in stack.model.bodies)


def test_one_file_viewed_again_and_again_is_ended_with_the_models_answer(tmp_path):
    work = workdir(tmp_path)
    with guarded(same_view(work), tmp_path) as stack:
        run = run_copilot("Watch the status file.", work, tmp_path / "home", stack.url)
    stack.check_ended(run)


def test_views_of_missing_paths_are_at_least_warned(tmp_path):
    work = workdir(tmp_path)
    with guarded(missing_views(work), tmp_path) as stack:
        run = run_copilot("Read the config files.", work, tmp_path / "home", stack.url)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "does not exist" in stack.model.executed()[0]
    assert stack.model.warned(), stack.actions()


@pytest.mark.parametrize(
    "script, calls",
    [
        (thirty_views, 30),
        (lambda work: moving_poll(), 8),
    ],
    ids=["thirty-different-files", "poll-whose-output-moves"],
)
def test_healthy_look_alikes_run_every_call(tmp_path, script, calls):
    work = workdir(tmp_path)
    with guarded(script(work), tmp_path) as stack:
        run = run_copilot("Go through the work.", work, tmp_path / "home", stack.url)
    stack.check_untouched(run, calls)
    assert DONE in run.stdout


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_error_mode_is_not_retried(tmp_path, stream):
    """With ``terminate.mode: error`` the run must end at once: one client request terminated,
    none resent after it. This CLI retries a streamed ``error`` event five times (a 422 status
    before the stream is final), so its profile ends such runs with the model's answer."""
    work = workdir(tmp_path)
    with guarded(same_view(work), tmp_path, error_mode_policy()) as stack:
        run = run_copilot("Watch the status file.", work, tmp_path / "home", stack.url, stream)
    assert len(stack.model.executed()) <= LIMIT, stack.actions()
    assert len(stack.terminated_requests()) == 1, (stack.actions(), run.stderr[-1500:])
    # Its profile ends error-mode runs with the model's answer (a streamed error is retried).
    assert FINAL in run.stdout, run.stdout[-1500:]
