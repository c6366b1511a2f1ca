"""Codex CLI configured for Azure OpenAI (its ``model_providers.azure``: the resource's
``/openai`` base URL and ``api-version`` query, wire API ``responses``) pointed at the gateway
instead of the resource: a loop is ended within 8 executed calls with the model's own tools-closed
answer, a healthy run reaches its own end untouched, every model request on Azure's Responses
route (the scripted resource refuses any other path, query or key). Skipped where the CLI is not
installed."""

from __future__ import annotations

import pytest
from support.cli_runs import (
    DONE,
    FINAL,
    LONG,
    NOTES,
    PAST_END_SEDS,
    SCROLL_SEDS,
    Scenario,
    check_ended,
    check_untouched,
    cycling,
    scripted,
)
from support.clis import find_cli
from support.clis_codex import run_codex

pytestmark = pytest.mark.skipif(find_cli("codex") is None, reason="Codex CLI is not installed")


def sh(command: str) -> tuple[str, dict[str, str]]:
    return "exec_command", {"cmd": command}


def judged_as(outcome) -> set[str]:
    """The protocols the gateway judged the run's steps under (its sessions' prefixes)."""
    return {e["session"].partition(":")[0] for e in outcome.audit if e.get("session")}


def test_a_codex_loop_on_azure_is_ended_with_the_models_answer(tmp_path):
    scenario = Scenario(
        "read_past_the_end_with_sed",
        cycling(lambda turn: [sh(c) for c in PAST_END_SEDS]),
        {"notes.txt": NOTES},
        prompt="Read notes.txt to the end.",
    )

    outcome = run_codex(scenario, tmp_path, azure=True)

    check_ended(outcome, FINAL, len(outcome.executed(scenario.counted)), outcome.model.closed)
    assert judged_as(outcome) == {"azure_responses"}, outcome.story()


def test_a_healthy_codex_run_on_azure_is_untouched(tmp_path):
    scenario = Scenario(
        "scroll_with_sed",
        scripted(lambda turn: [sh(c) for c in SCROLL_SEDS]),
        {"long.txt": LONG},
        calls=5,
        prompt="Read long.txt.",
    )

    outcome = run_codex(scenario, tmp_path, azure=True)

    check_untouched(
        outcome, DONE, len(outcome.executed()), scenario.calls, outcome.executed_at_first_warning() is not None
    )
    assert len(outcome.conversations) >= 6, outcome.story()  # every turn reached the resource
