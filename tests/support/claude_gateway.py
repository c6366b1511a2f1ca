"""A real gateway between the anthropic SDK and a scripted Anthropic upstream, on loopback."""

from __future__ import annotations

import anthropic
import pytest

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.anthropic_upstream import AnthropicUpstream
from support.policies import ladder_policy
from support.servers import serve


@pytest.fixture
def start_claude(tmp_path):
    """Start (scripted Anthropic upstream, gateway); returns (upstream, client, gateway url)."""
    contexts = []

    def start(responder, policy_text: str | None = None, sessions: dict | None = None, **upstream_config):
        upstream = AnthropicUpstream(responder)
        ctx = serve(upstream.app)
        url = ctx.__enter__()
        contexts.append(ctx)
        policy = tmp_path / "policy.yaml"
        policy.write_text(policy_text or ladder_policy())
        # The OpenAI upstream is never reached: a closed port proves it.
        config = Config.model_validate(
            {
                "upstream": {"base_url": "http://127.0.0.1:9/v1", "anthropic_base_url": url, **upstream_config},
                "sessions": sessions or {},
            }
        )
        ctx = serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS)
        gateway = ctx.__enter__()
        contexts.append(ctx)
        client = anthropic.Anthropic(base_url=gateway, api_key="sk-ant-client", max_retries=0, timeout=20)
        return upstream, client, gateway

    yield start
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)
