"""Every generate route of every guarded protocol and cloud, with the request of an agent that
has made the same call four times (the 5th identical call is the one the policy ends the run
on), and a real gateway whose every provider is one ``LoopingCloud``.

``ROUTES`` lists each route as a client sends it (the gateway's path and query) with its
protocol family and whether its reply streams; ``looping_body`` writes the request body a
client of that family sends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.loop_bodies import chat_request, claude_request, responses_request
from support.looping_cloud import ARGS, LoopingCloud
from support.policies import ladder_policy
from support.servers import serve

BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
LOCATED = "/v1/projects/proj/locations/us-east5"


@dataclass(frozen=True)
class Route:
    name: str
    family: str  # chat | responses | anthropic | bedrock | vertex_anthropic | gemini | converse
    path: str  # as the client sends it
    query: str = ""
    stream: bool = False  # whether the reply streams (for body-flag protocols: what the body asks)

    @property
    def target(self) -> str:
        return self.path + ("?" + self.query if self.query else "")

    @property
    def answered_as(self) -> str:
        """The protocol family the cloud answers the route's model call in."""
        return "anthropic" if self.family == "vertex_anthropic" else self.family


def _both(name: str, family: str, path: str, query: str = "") -> list[Route]:
    """A route whose body says whether it streams."""
    return [Route(name, family, path, query), Route(name + "+stream", family, path, query, stream=True)]


def _pair(name: str, family: str, unary: str, streamed: str, query: str = "") -> list[Route]:
    """A route pair whose path says whether it streams."""
    stream_query = "&".join(q for q in (query, "alt=sse" if family == "gemini" else "") if q)
    return [Route(name, family, unary, query), Route(name + "+stream", family, streamed, stream_query, stream=True)]


ROUTES: tuple[Route, ...] = (
    *_both("openai-chat", "chat", "/v1/chat/completions"),
    *_both("openai-chat-bare", "chat", "/chat/completions"),
    *_both("openai-responses", "responses", "/v1/responses"),
    *_both("anthropic", "anthropic", "/v1/messages"),
    *(
        route
        for version in ("v1beta", "v1", "v1alpha")
        for models in ("models", "tunedModels", "dynamic")
        for route in _pair(
            f"gemini-{version}-{models}",
            "gemini",
            f"/{version}/{models}/gemini-x:generateContent",
            f"/{version}/{models}/gemini-x:streamGenerateContent",
        )
    ),
    *_both("gemini-openai-chat", "chat", "/v1beta/openai/chat/completions"),
    *_both("azure-deployment-chat", "chat", "/openai/deployments/gpt-4.1/chat/completions", "api-version=2025-04-01"),
    *_both("azure-v1-chat", "chat", "/openai/v1/chat/completions"),
    *_both("azure-chat", "chat", "/openai/chat/completions", "api-version=2025-04-01"),
    *_both("azure-v1-deployment-chat", "chat", "/openai/v1/deployments/gpt-4.1/chat/completions"),
    *_both("azure-responses", "responses", "/openai/responses", "api-version=2025-04-01"),
    *_both("azure-v1-responses", "responses", "/openai/v1/responses"),
    *_both(
        "azure-deployment-responses", "responses", "/openai/deployments/gpt-4.1/responses", "api-version=2025-04-01"
    ),
    *_both("azure-v1-deployment-responses", "responses", "/openai/v1/deployments/gpt-4.1/responses"),
    *_pair(
        "bedrock-invoke",
        "bedrock",
        f"/bedrock/model/{BEDROCK_MODEL}/invoke",
        f"/bedrock/model/{BEDROCK_MODEL}/invoke-with-response-stream",
    ),
    *_pair(
        "bedrock-converse",
        "converse",
        f"/bedrock/model/{BEDROCK_MODEL}/converse",
        f"/bedrock/model/{BEDROCK_MODEL}/converse-stream",
    ),
    *_both("bedrock-openai-chat", "chat", "/bedrock/openai/v1/chat/completions"),
    *_both("bedrock-v1-chat", "chat", "/bedrock/v1/chat/completions"),
    *_both("bedrock-openai-responses", "responses", "/bedrock/openai/v1/responses"),
    *_pair(
        "vertex-gemini",
        "gemini",
        f"/vertex{LOCATED}/publishers/google/models/gemini-x:generateContent",
        f"/vertex{LOCATED}/publishers/google/models/gemini-x:streamGenerateContent",
    ),
    *_pair(
        "vertex-gemini-express",
        "gemini",
        "/vertex/v1/publishers/google/models/gemini-x:generateContent",
        "/vertex/v1/publishers/google/models/gemini-x:streamGenerateContent",
    ),
    *_pair(
        "vertex-gemini-endpoint",
        "gemini",
        f"/vertex{LOCATED}/endpoints/1234:generateContent",
        f"/vertex{LOCATED}/endpoints/1234:streamGenerateContent",
    ),
    *_pair(
        "vertex-anthropic",
        "vertex_anthropic",
        f"/vertex{LOCATED}/publishers/anthropic/models/claude-x@1:rawPredict",
        f"/vertex{LOCATED}/publishers/anthropic/models/claude-x@1:streamRawPredict",
    ),
    *_both("vertex-openai-chat", "chat", f"/vertex{LOCATED}/endpoints/openapi/chat/completions"),
)


def looping_body(route: Route, times: int = 4) -> dict[str, Any]:
    """The request of an agent that has called ``read_file`` on a.txt ``times`` times, in the
    route's format."""
    family = route.family
    if family == "chat":
        return {**chat_request(times), "stream": route.stream}
    if family == "responses":
        return {**responses_request(times), "stream": route.stream}
    if family == "anthropic":
        return {**claude_request(times), "stream": route.stream}
    if family in ("bedrock", "vertex_anthropic"):
        body = {k: v for k, v in claude_request(times).items() if k != "model"}
        version = "bedrock-2023-05-31" if family == "bedrock" else "vertex-2023-10-16"
        return {
            **body,
            "anthropic_version": version,
            **({"stream": True} if family != "bedrock" and route.stream else {}),
        }
    if family == "gemini":
        contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "summarize a.txt"}]}]
        for _ in range(times):
            call = {"functionCall": {"name": "read_file", "args": json.loads(ARGS)}}
            contents.append({"role": "model", "parts": [call]})
            result = {"functionResponse": {"name": "read_file", "response": {"result": "same"}}}
            contents.append({"role": "user", "parts": [result]})
        return {"contents": contents, "tools": [{"functionDeclarations": [{"name": "read_file"}]}]}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "summarize a.txt"}]}]
    for n in range(times):
        use = {"toolUseId": f"tooluse_{n}", "name": "read_file", "input": json.loads(ARGS)}
        messages.append({"role": "assistant", "content": [{"toolUse": use}]})
        result = {"toolUseId": f"tooluse_{n}", "content": [{"text": "same"}]}
        messages.append({"role": "user", "content": [{"toolResult": result}]})
    tools = [{"toolSpec": {"name": "read_file", "inputSchema": {"json": {"type": "object"}}}}]
    return {"messages": messages, "toolConfig": {"tools": tools}}


HEADERS = [
    ("Content-Type", "application/json"),
    ("Authorization", "Bearer client-key"),
    ("anthropic-version", "2023-06-01"),
]


@contextmanager
def cloud_gateway(tmp_path: Path, cloud: LoopingCloud, **settings: Any) -> Iterator[str]:
    """A real gateway (ladder policy: warn 3, reject 4, end 5) whose every provider is ``cloud``,
    on loopback; yields its URL. ``settings``: more ``upstream`` settings."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    with serve(cloud, lifespan="off") as url:
        config = Config.model_validate(
            {
                "upstream": {
                    "base_url": url + "/_openai/v1",
                    "anthropic_base_url": url + "/_anthropic",
                    "gemini_base_url": url + "/_gemini",
                    "azure_base_url": url + "/_azure",
                    "bedrock_base_url": url + "/_bedrock",
                    "vertex_base_url": url + "/_vertex",
                    "timeout_s": 10,
                    **settings,
                }
            }
        )
        with serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS) as gateway:
            yield gateway
