"""Claude Code on Vertex AI through the gateway holding the Google credentials
(``CLAUDE_CODE_USE_VERTEX=1``, ``CLAUDE_CODE_SKIP_VERTEX_AUTH=1``,
``ANTHROPIC_VERTEX_BASE_URL=<gateway>/vertex/v1``): a looping run is ended within 8 executed
calls with the model's own tools-closed answer, a healthy one runs every call untouched, and
every request reaches the cloud under the gateway's token. Skipped where the CLI is not
installed."""

from __future__ import annotations

import pytest
from support.cli_runs import DONE, FINAL, Scenario, check_ended, check_untouched, cycling, scripted
from support.clis import find_cli
from support.clis_claude_vertex import run_claude_vertex

pytestmark = pytest.mark.skipif(find_cli("claude") is None, reason="Claude Code is not installed")


def _same_read(turn):
    return [("Bash", {"command": "cat settings.ini", "description": d}) for d in ("Show the settings", "Print them")]


def _different_reads(turn):
    return [("Read", {"file_path": str(turn.work / f"src/f{n}.txt")}) for n in range(4)]


LOOP = Scenario("same_read", cycling(_same_read), {"settings.ini": "a=1\n"}, prompt="What do the settings say?")
HEALTHY = Scenario(
    "four_files",
    scripted(_different_reads),
    {f"src/f{n}.txt": f"file {n}\n" for n in range(4)},
    calls=4,
    prompt="Review src.",
)


def _on_vertex_with_the_gateways_token(cloud, tokens) -> None:
    assert cloud.paths and all(
        p.startswith("/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-") for p in cloud.paths
    )
    assert set(cloud.tokens) == {"ya29.gateway-1"} and tokens.issued == ["ya29.gateway-1"]


def test_a_looping_claude_code_run_on_vertex_is_ended_with_the_models_answer(tmp_path):
    outcome, cloud, tokens = run_claude_vertex(LOOP, tmp_path)
    check_ended(outcome, FINAL, len(outcome.executed(LOOP.counted)), outcome.model.closed)
    _on_vertex_with_the_gateways_token(cloud, tokens)


def test_a_healthy_claude_code_run_on_vertex_runs_every_call_untouched(tmp_path):
    outcome, cloud, tokens = run_claude_vertex(HEALTHY, tmp_path)
    check_untouched(outcome, DONE, len(outcome.executed()), HEALTHY.calls, outcome.warned)
    _on_vertex_with_the_gateways_token(cloud, tokens)
