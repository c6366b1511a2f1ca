"""``loopguard replay`` as operators run it, and the promise that litellm stays off the gateway."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.process import ROOT, child_env
from support.sessions import home_with_sessions

FIXTURES = Path(__file__).parents[1] / "fixtures" / "replay"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], env=child_env(), cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_replay_prints_the_table_and_no_progress_bar_off_a_terminal():
    result = run("replay", str(FIXTURES / "support_bot.json"), "--policy", "default")
    assert result.returncode == 0, result.stderr
    assert "support_bot.json:1" in result.stdout and "no_progress" in result.stdout
    assert "replaying" not in result.stderr  # tqdm is disabled when stderr is not a TTY


def test_usage_error_and_bad_policy(tmp_path):
    assert run("replay").returncode == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmax_action: stop\n")
    result = run("replay", str(FIXTURES / "support_bot.json"), "--policy", str(bad))
    assert result.returncode == 1 and f"{bad}: max_action" in result.stderr


def test_litellm_is_never_imported_by_the_gateway_or_the_table():
    probe = """
import sys
from gateway.config import Config
from gateway.server.app import build_app
import gateway.cli
build_app(Config())
from gateway.replay.command import run_replay
import io
run_replay([sys.argv[1]], out=io.StringIO(), err=io.StringIO())
print("litellm" in sys.modules)
"""
    result = subprocess.run(
        [sys.executable, "-c", probe, str(FIXTURES / "support_bot.json")],
        env=child_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "False", result.stderr


def test_the_documented_replay_and_check_commands_work_from_a_clone(tmp_path):
    """Every ``loopguard replay`` / ``loopguard check`` line of the README and the documentation
    pages, as a newcomer pastes it in a fresh clone (run in a copy of its layout, so a report
    lands in the temporary folder), with a home folder where each client keeps its sessions
    (the clients' own logs, tests/fixtures/sessions)."""
    for name in ("tests", "policies", "config.example.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    home = home_with_sessions(tmp_path / "home")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    lines = [line.split("#")[0].strip() for page in pages for line in page.read_text(encoding="utf-8").splitlines()]
    commands = [line for line in lines if line.startswith(("loopguard replay ", "loopguard check "))]
    assert len(commands) >= 4
    for command in commands:
        shell = command.replace("loopguard", f"{sys.executable} -m gateway", 1)
        env = {**child_env(), "HOME": str(home)}
        result = subprocess.run(
            ["bash", "-c", shell], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, (command, result.stderr[-2000:])
        assert "skipped" not in result.stderr, (command, result.stderr[-2000:])  # every log read
    assert (tmp_path / "report.html").stat().st_size > 1000
    assert json.loads((tmp_path / "replay.json").read_text())["scores"]["labels"]["loop"]["runs"] == 2  # Claude Code's
