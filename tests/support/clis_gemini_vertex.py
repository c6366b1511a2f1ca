"""Gemini CLI on Vertex AI (auth type ``vertex-ai``, ``GOOGLE_GENAI_USE_VERTEXAI=true``) through a
real gateway: the CLI names the gateway's ``/vertex/`` as its Vertex endpoint
(``GOOGLE_VERTEX_BASE_URL``) with a Vertex API key (express mode: ``GOOGLE_API_KEY``, sent as
``x-goog-api-key``, paths without a project); the gateway forwards it and the scripted Vertex
upstream accepts that key only. (With a service account instead the CLI's google-auth asks
Google's own token endpoint, whatever the key file names: not reachable here.) Scenarios,
scripts and the model are Gemini CLI's (:mod:`support.clis_gemini`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.clis_gemini import (
    GEMINI,
    GEMINI_CLI,
    GEMINI_SETTINGS,
    Outcome,
    Scenario,
    Vocabulary,
    gemini_model,
    run_fork,
)
from support.vertex_upstream import VertexUpstream

CLI_KEY = "AQ.vertex-express-key"


def run_gemini_vertex(
    scenario: Scenario, base: Path, vocabulary: Vocabulary = GEMINI, policy: str | None = None
) -> tuple[Outcome, list[VertexUpstream]]:
    """Run ``scenario`` with Gemini CLI on Vertex through a gateway; also returns the cloud."""
    clouds: list[VertexUpstream] = []

    def upstream(script):
        clouds.append(VertexUpstream(gemini=gemini_model(script), token="no-token-accepted", api_key=CLI_KEY))
        return clouds[-1]

    fork = replace(
        GEMINI_CLI,
        settings={**GEMINI_SETTINGS, "security": {"auth": {"selectedType": "vertex-ai"}}},
        upstream=upstream,
        route=lambda url: {"vertex_base_url": url},
        env=lambda gateway: {
            "GOOGLE_GENAI_USE_VERTEXAI": "true",
            "GOOGLE_API_KEY": CLI_KEY,
            "GOOGLE_VERTEX_BASE_URL": gateway + "/vertex/",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        },
    )
    return run_fork(fork, scenario, base, vocabulary, policy), clouds
