"""A scripted Azure OpenAI resource: chat completions and the Responses API on Azure's paths,
refusing what a real resource refuses, and a real gateway in front of it.

Its model endpoints are the scripted chat and Responses models (``RespondingUpstream``,
``ResponsesUpstream``) behind the checks an Azure resource makes first: a credential (the
``api-key`` header, or an ``Authorization: Bearer`` Entra token or v1 key), an ``api-version``
query on the versioned routes (``/openai/deployments/...``, ``/openai/responses``), and a
deployment it has (named by the path, else by the body's ``model``). What it refuses it answers
in Azure's shape. ``seen`` records every model request as it arrived (path, query, credential,
deployment) before any check.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.responses_upstream import Answer, Responder, ResponsesUpstream
from support.servers import serve
from support.upstream import Reply

API_VERSION = "2025-04-01-preview"
# The one deployment the resource has, named as the model it serves (the agents' model).
DEPLOYMENT = "gpt-4.1"
CLIENT_KEY = "az-client-key"
ENTRA_TOKEN = "entra-token"
_ALL = ["GET", "POST", "DELETE", "PUT", "PATCH"]


def azure_error(status: int, code: str, message: str) -> Response:
    return Response(
        orjson.dumps({"error": {"code": code, "message": message}}), status_code=status, media_type="application/json"
    )


class AzureUpstream:
    def __init__(
        self,
        chat: Callable[[dict], Reply] | None = None,
        responses: Responder | None = None,
        keys: tuple[str, ...] = (CLIENT_KEY,),
        tokens: tuple[str, ...] = (ENTRA_TOKEN,),
        deployment: str = DEPLOYMENT,
    ) -> None:
        self.chat = RespondingUpstream(chat or (lambda request: Reply(content="ok")))
        self.responses = ResponsesUpstream(responses or (lambda conversation, body: Answer("ok")))
        self.keys, self.tokens, self.deployment = keys, tokens, deployment
        self.seen: list[dict[str, Any]] = []
        self.others: list[dict[str, Any]] = []  # relayed requests: method, path, query, headers
        chat_model, responses_model = self.chat._chat, self.responses._create
        self.app = Starlette(
            routes=[
                Route("/openai/deployments/{deployment}/chat/completions", self._model(chat_model), methods=["POST"]),
                Route("/openai/deployments/{deployment}/responses", self._model(responses_model), methods=["POST"]),
                Route("/openai/v1/chat/completions", self._model(chat_model, v1=True), methods=["POST"]),
                Route("/openai/v1/responses", self._model(responses_model, v1=True), methods=["POST"]),
                Route("/openai/responses", self._model(responses_model), methods=["POST"]),
                Route("/openai/{rest:path}", self._other, methods=_ALL),
            ]
        )

    @property
    def last(self) -> dict[str, Any]:
        return self.seen[-1]

    def _refusal(self, request: Request, v1: bool) -> Response | None:
        """What a resource answers before any model sees the request; None: it goes on."""
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if request.headers.get("api-key") not in self.keys and bearer not in (*self.tokens, *self.keys):
            return azure_error(401, "401", "Access denied due to invalid subscription key or wrong API endpoint.")
        if not v1 and request.query_params.get("api-version") != API_VERSION:
            return azure_error(404, "404", "Resource not found")
        return None

    def _model(self, answer: Callable[[Request], Awaitable[Response]], v1: bool = False) -> Any:
        async def endpoint(request: Request) -> Response:
            raw = await request.body()  # kept by the request: ``answer`` reads it again
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                body = None
            deployment = request.path_params.get("deployment") or (body or {}).get("model")
            self.seen.append(
                {
                    "path": request.url.path,
                    "query": request.url.query,
                    "headers": dict(request.headers),
                    "deployment": deployment,
                    "raw": raw,
                }
            )
            refusal = self._refusal(request, v1)
            if refusal is not None:
                return refusal
            if body is None:
                return azure_error(400, "BadRequest", "We could not parse the JSON body of your request.")
            if deployment != self.deployment:
                return azure_error(404, "DeploymentNotFound", "The API deployment for this resource does not exist.")
            return await answer(request)

        return endpoint

    async def _other(self, request: Request) -> Response:
        self.others.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": request.url.query,
                "headers": dict(request.headers),
                "raw": await request.body(),
            }
        )
        refusal = self._refusal(request, request.url.path.startswith("/openai/v1/"))
        if refusal is not None:
            return refusal
        path = request.url.path.removeprefix("/openai/v1").removeprefix("/openai")
        if request.method == "POST" and path == "/files":
            return Response(
                orjson.dumps({"id": f"file-{len(self.others)}", "object": "file"}), media_type="application/json"
            )
        if request.method == "GET" and path == "/models":
            listing = {"object": "list", "data": [{"id": "gpt-4o", "object": "model"}]}
            return Response(orjson.dumps(listing), media_type="application/json")
        return Response(orjson.dumps({"object": "ok", "path": path}), media_type="application/json")


@contextmanager
def azure_gateway(
    upstream: AzureUpstream, tmp_path: Path, policy: str | None = None, **upstream_config: Any
) -> Iterator[str]:
    """A real gateway in front of ``upstream`` (its ``azure_base_url``; the OpenAI upstream a
    closed port, so nothing reaches it), behind the ladder policy unless told otherwise."""
    with serve(upstream.app) as url:
        policy_file = tmp_path / "policy.yaml"
        policy_file.write_text(policy or ladder_policy())
        settings = {"base_url": "http://127.0.0.1:9/v1", "azure_base_url": url, **upstream_config}
        config = Config.model_validate({"upstream": settings})
        with serve(build_app(config, policies=PolicyHolder(policy_file)), **SERVER_OPTIONS) as gateway:
            yield gateway


@pytest.fixture
def start_azure(tmp_path):
    """(upstream, gateway URL) for scripted chat and Responses models (``AzureUpstream``'s
    arguments), behind the ladder policy (warn 3, reject 4, end 5); ``policy`` and upstream
    settings (``azure_api_key=...``) by keyword."""
    with ExitStack() as stack:

        def start(
            chat: Callable[[dict], Reply] | None = None,
            responses: Responder | None = None,
            keys: tuple[str, ...] = (CLIENT_KEY,),
            policy: str | None = None,
            **settings: Any,
        ) -> tuple[AzureUpstream, str]:
            upstream = AzureUpstream(chat, responses, keys)
            return upstream, stack.enter_context(azure_gateway(upstream, tmp_path, policy, **settings))

        yield start


def azure_client(url: str, deployment: str | None = None, **auth: Any) -> openai.AzureOpenAI:
    """The openai SDK's Azure client at ``url`` (``azure_endpoint``), the client's key unless
    ``auth`` says otherwise (``azure_ad_token=...``)."""
    return openai.AzureOpenAI(
        azure_endpoint=url,
        azure_deployment=deployment,
        api_version=API_VERSION,
        max_retries=0,
        timeout=20,
        **(auth or {"api_key": CLIENT_KEY}),
    )


def async_azure_client(url: str) -> openai.AsyncAzureOpenAI:
    return openai.AsyncAzureOpenAI(
        azure_endpoint=url, api_version=API_VERSION, api_key=CLIENT_KEY, max_retries=0, timeout=20
    )


def v1_client(url: str) -> openai.OpenAI:
    """The plain openai SDK on Azure's v1 routes (``base_url=<resource>/openai/v1/``)."""
    return openai.OpenAI(base_url=url + "/openai/v1/", api_key=CLIENT_KEY, max_retries=0, timeout=20)
