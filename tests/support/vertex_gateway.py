"""A real gateway in front of a scripted Vertex AI upstream, on loopback, and the official
Vertex clients aimed at it: google-genai (``vertexai=True``) and ``AnthropicVertex``.

With ``credentials="gateway"`` the gateway holds a service account (google-auth's default
chain, via ``GOOGLE_APPLICATION_CREDENTIALS``) whose token endpoint is a scripted one, and the
upstream accepts only the token that endpoint issued first; else each client's own token
is forwarded and the upstream accepts ``CLIENT_TOKEN``."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from anthropic import AnthropicVertex
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.google_oauth import TokenServer
from support.policies import ladder_policy
from support.servers import serve
from support.vertex_upstream import VertexUpstream

CLIENT_TOKEN = "ya29.client-token"
PROJECT, LOCATION, REGION = "proj", "us-central1", "us-east5"


def genai_client(base: str, token: str | None = CLIENT_TOKEN) -> genai.Client:
    """google-genai on Vertex, its endpoint ``base`` (the gateway's ``/vertex/`` or the cloud)."""
    return genai.Client(
        vertexai=True,
        project=PROJECT,
        location=LOCATION,
        credentials=Credentials(token=token),
        http_options=types.HttpOptions(base_url=base, timeout=20_000),
    )


def claude_client(base: str, token: str = CLIENT_TOKEN) -> AnthropicVertex:
    """AnthropicVertex, its endpoint ``base`` (the gateway's ``/vertex/v1`` or the cloud's ``/v1``)."""
    return AnthropicVertex(region=REGION, project_id=PROJECT, base_url=base, access_token=token, max_retries=0)


@dataclass
class Started:
    upstream: VertexUpstream
    url: str  # the gateway
    tokens: TokenServer | None  # the gateway's token endpoint, when it holds credentials

    def genai(self, token: str | None = CLIENT_TOKEN) -> genai.Client:
        return genai_client(self.url + "/vertex/", token)

    def claude(self, token: str = CLIENT_TOKEN) -> AnthropicVertex:
        return claude_client(self.url + "/vertex/v1", token)


@pytest.fixture
def start_vertex(tmp_path, monkeypatch):
    """start(gemini=..., claude=..., credentials="client"|"gateway", policy_text=..., config=...,
    upstream_settings=...: more ``upstream`` settings)."""
    contexts = []
    started_tokens: list[TokenServer] = []

    def enter(app, **options) -> str:
        ctx = serve(app, **options)
        contexts.append(ctx)
        return ctx.__enter__()

    def start(
        gemini=None,
        claude=None,
        credentials="client",
        policy_text=None,
        config=None,
        answers=None,
        upstream_settings=None,
    ):
        tokens = None
        extra = {}
        if credentials == "gateway":
            tokens = TokenServer()
            started_tokens.append(tokens)
            tokens.url = enter(tokens.app)
            monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tokens.key_file(tmp_path)))
            extra["vertex_credentials"] = "gateway"
        extra.update(upstream_settings or {})
        upstream = VertexUpstream(gemini, claude, "ya29.gateway-1" if tokens else CLIENT_TOKEN, answers)
        cloud = enter(upstream.app)
        policy = tmp_path / "policy.yaml"
        policy.write_text(policy_text or ladder_policy())
        settings = Config.model_validate(
            {
                # The OpenAI upstream is never reached: a closed port proves it.
                "upstream": {"base_url": "http://127.0.0.1:9/v1", "vertex_base_url": cloud, **extra},
                **(config or {}),
            }
        )
        url = enter(build_app(settings, policies=PolicyHolder(policy)), **SERVER_OPTIONS)
        return Started(upstream, url, tokens)

    yield start
    for server in started_tokens:
        server.broken = None  # a stalled endpoint answers, so its server stops at once
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)
