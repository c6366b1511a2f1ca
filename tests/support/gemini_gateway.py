"""A real gateway between the google-genai SDK and a scripted Gemini upstream, on loopback."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import types

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.gemini_upstream import GeminiUpstream
from support.policies import ladder_policy
from support.servers import serve


def client_for(url: str, api_key: str = "gm-client") -> genai.Client:
    return genai.Client(api_key=api_key, http_options=types.HttpOptions(base_url=url, timeout=20_000))


@pytest.fixture
def start_gemini(tmp_path):
    """Start (scripted Gemini upstream, gateway); returns (upstream, client, gateway url)."""
    contexts = []

    def start(
        responder,
        policy_text: str | None = None,
        config: dict | None = None,
        answers: str | None = None,
        **upstream_config,
    ):
        upstream = GeminiUpstream(responder, answers)
        ctx = serve(upstream.app)
        url = ctx.__enter__()
        contexts.append(ctx)
        policy = tmp_path / "policy.yaml"
        policy.write_text(policy_text or ladder_policy())
        # The OpenAI upstream is never reached: a closed port proves it.
        settings = Config.model_validate(
            {
                "upstream": {"base_url": "http://127.0.0.1:9/v1", "gemini_base_url": url, **upstream_config},
                **(config or {}),
            }
        )
        ctx = serve(build_app(settings, policies=PolicyHolder(policy)), **SERVER_OPTIONS)
        gateway = ctx.__enter__()
        contexts.append(ctx)
        return upstream, client_for(gateway), gateway

    yield start
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)
