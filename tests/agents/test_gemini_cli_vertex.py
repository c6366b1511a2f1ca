"""Gemini CLI on Vertex AI (auth type ``vertex-ai``, ``GOOGLE_VERTEX_BASE_URL=<gateway>/vertex/``)
with its own Vertex API key (express mode), forwarded by the gateway: a looping run is ended with the
model's own answer within 8 executed calls, a healthy one runs every call untouched, and every
request reaches the cloud under the CLI's key. Skipped where the CLI is not installed."""

from __future__ import annotations

import pytest
from support.cli_runs import check_ended, check_untouched
from support.clis import find_cli
from support.clis_gemini import DONE, FINAL, HEALTHY, SAME_CALL
from support.clis_gemini_vertex import CLI_KEY, run_gemini_vertex

pytestmark = pytest.mark.skipif(find_cli("gemini") is None, reason="Gemini CLI is not installed")


def _on_vertex_with_the_clis_key(clouds) -> None:
    (cloud,) = clouds
    assert cloud.paths and all(p.startswith("/v1beta1/publishers/google/models/") for p in cloud.paths)
    assert all(r["headers"]["x-goog-api-key"] == CLI_KEY for r in cloud.requests)


def test_a_looping_gemini_cli_run_on_vertex_is_ended_with_the_models_answer(tmp_path):
    outcome, clouds = run_gemini_vertex(SAME_CALL, tmp_path)
    check_ended(outcome, FINAL, outcome.executed, outcome.closed)
    _on_vertex_with_the_clis_key(clouds)


def test_a_healthy_gemini_cli_run_on_vertex_runs_every_call_untouched(tmp_path):
    scenario = HEALTHY[0]
    outcome, clouds = run_gemini_vertex(scenario, tmp_path)
    check_untouched(outcome, DONE, outcome.executed, scenario.calls, outcome.warned)
    _on_vertex_with_the_clis_key(clouds)
