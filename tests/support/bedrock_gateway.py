"""A real gateway between ``AnthropicBedrock`` and a scripted Bedrock runtime, on loopback.

The gateway's AWS credentials come from botocore's standard chain, as in production: the
scripted credentials in ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` when it holds them,
else none (no profile file, no instance metadata: the chain finds nothing at once).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from anthropic import AnthropicBedrock

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support import sigv4_check
from support.bedrock_upstream import BedrockUpstream
from support.policies import ladder_policy
from support.servers import serve


def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, credentials: bool) -> None:
    """The process's AWS chain: the scripted credentials in the environment, or nothing."""
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_BEARER_TOKEN_BEDROCK",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_REGION", sigv4_check.REGION)
    if credentials:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", sigv4_check.ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", sigv4_check.SECRET_KEY)


def bedrock_client(url: str, **auth: str) -> AnthropicBedrock:
    """The SDK pointed at ``url`` (a gateway's ``/bedrock`` or the cloud itself), signing with the
    scripted credentials unless ``auth`` says otherwise (``api_key=...``, other keys)."""
    if not auth:
        auth = {"aws_access_key": sigv4_check.ACCESS_KEY, "aws_secret_key": sigv4_check.SECRET_KEY}
    return AnthropicBedrock(aws_region=sigv4_check.REGION, base_url=url, max_retries=0, timeout=20, **auth)


@pytest.fixture
def start_bedrock(tmp_path, monkeypatch):
    """Start (scripted Bedrock, gateway); returns (upstream, gateway's Bedrock base URL)."""
    contexts = []

    def start(responder, credentials: bool = True, policy_text: str | None = None, **upstream_config):
        aws_env(monkeypatch, tmp_path, credentials)
        upstream = BedrockUpstream(responder)
        ctx = serve(upstream.app)
        url = ctx.__enter__()
        contexts.append(ctx)
        policy = tmp_path / "policy.yaml"
        policy.write_text(policy_text or ladder_policy())
        settings = Config.model_validate(
            {"upstream": {"base_url": "http://127.0.0.1:9/v1", "bedrock_base_url": url, **upstream_config}}
        )
        ctx = serve(build_app(settings, policies=PolicyHolder(policy)), **SERVER_OPTIONS)
        gateway = ctx.__enter__()
        contexts.append(ctx)
        upstream.url = url
        return upstream, gateway + "/bedrock"

    yield start
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)
