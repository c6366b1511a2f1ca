"""The ``start_guarded`` fixture: a real gateway in front of a responding upstream, with a policy text.

Shared by the test packages whose conftest imports it (guard, pipeline)."""

import openai
import pytest

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import build_app
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.servers import serve


@pytest.fixture
def start_guarded(tmp_path):
    """Start (responding upstream, gateway) with a policy text; returns (upstream, client, holder)."""
    contexts = []

    def start(responder, policy_text: str | None = None, registry=None, config: dict | None = None):
        upstream = RespondingUpstream(responder)
        ctx = serve(upstream.app)
        upstream.url = ctx.__enter__()
        contexts.append(ctx)
        policy_file = tmp_path / "policy.yaml"
        policy_file.write_text(policy_text or ladder_policy())
        holder = PolicyHolder(policy_file, registry)
        config = Config.model_validate({"upstream": {"base_url": upstream.url + "/v1"}, **(config or {})})
        app = build_app(config, policies=holder)
        ctx = serve(app)
        url = ctx.__enter__()
        contexts.append(ctx)
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        client.gateway_url = url
        client.gateway_app = app
        return upstream, client, holder

    yield start
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)
