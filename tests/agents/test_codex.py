"""Codex CLI itself (``codex exec``, full auto) through the gateway with its shipped default
policy, against a scripted OpenAI Responses model (streamed: the CLI always streams): the smoke
set, one loop and one healthy run on the OpenAI route (Azure: tests/protocols/azure/).

Codex has no read tool: it reads with ``exec_command`` and edits with the freeform
``apply_patch`` tool. The loop (one failing test run spelled eight ways) is ended within 8
executed calls, exit code 0, the model's own tools-closed answer in stdout; the healthy run
(read, run the check, patch, run again until it passes) runs every call and no gateway text ever
reaches the model. Its other loops and look-alikes, in every recorded version, are replayed from
its recorded traffic (tests/agents/test_recorded*.py). Skipped where the CLI is not installed."""

from __future__ import annotations

from typing import Any

import pytest
from support.cli_runs import (
    CALC,
    CHECK,
    DONE,
    FAILING_TEST,
    FINAL,
    Scenario,
    Turn,
    check_ended,
    check_untouched,
    cycling,
    failing_test_runs,
    scripted,
)
from support.clis import find_cli
from support.clis_codex import run_codex

pytestmark = pytest.mark.skipif(find_cli("codex") is None, reason="Codex CLI is not installed")


def sh(command: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return "exec_command", {"cmd": command, **more}


def patch(path: str, old: str, new: str) -> tuple[str, str]:
    return "apply_patch", f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"


LOOP = Scenario(
    "failing_test_spelled_many_ways",
    cycling(lambda turn: [sh(c) for c in failing_test_runs(turn.work)]),
    {"tests/test_total.py": FAILING_TEST},
)


def _edit_run_test(turn: Turn):
    return [
        sh("cat calc.py"),
        sh("python check_calc.py"),
        patch("calc.py", "    return a - b", "    return a + b"),
        sh("python check_calc.py"),
        patch("calc.py", "    return a ** b", "    return a * b"),
        sh("python check_calc.py"),
    ]


HEALTHY = Scenario(
    "edit_run_test_until_it_passes", scripted(_edit_run_test), {"calc.py": CALC, "check_calc.py": CHECK}, calls=6
)


def test_a_codex_loop_is_ended_with_the_models_answer(tmp_path):
    outcome = run_codex(LOOP, tmp_path)
    check_ended(outcome, FINAL, len(outcome.executed(LOOP.counted)), outcome.model.closed)


def test_a_healthy_codex_run_runs_every_call_untouched(tmp_path):
    outcome = run_codex(HEALTHY, tmp_path)
    check_untouched(outcome, DONE, len(outcome.executed()), HEALTHY.calls, outcome.warned)
