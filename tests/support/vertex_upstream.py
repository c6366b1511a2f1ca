"""A scripted Vertex AI upstream: Gemini and Anthropic models under Vertex's paths, each request's
OAuth bearer token checked as Google checks it.

``/{version}/projects/{p}/locations/{l}/publishers/google/models/{model}:{method}`` is answered
by a scripted Gemini model (``GeminiUpstream``), ``.../publishers/anthropic/models/{model}:
rawPredict`` / ``:streamRawPredict`` by a scripted Claude (``AnthropicUpstream``), which here
refuses a model call whose body names a model or lacks ``anthropic_version`` (Vertex's rule) and streams when
the path says so. A wrong or missing token is 401, an unknown model (no ``gemini-...``,
no ``claude-...``) 404, in Google's error shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from support.anthropic_upstream import AnthropicUpstream
from support.anthropic_upstream import Said as ClaudeSaid
from support.gemini_upstream import GeminiUpstream
from support.gemini_upstream import Said as GeminiSaid

GEMINI = "gemini-test"
CLAUDE = "claude-test@20250101"
LOCATED = "/{version}/projects/{project}/locations/{location}/publishers"


def google_error(status: int, message: str, code: str) -> Response:
    return Response(orjson.dumps({"error": {"code": status, "message": message, "status": code}}), status)


class VertexUpstream:
    """``token``: the only bearer token accepted; ``tokens`` records each request's (None: none)."""

    def __init__(
        self,
        gemini: Callable[[dict], GeminiSaid] | None = None,
        claude: Callable[[dict], ClaudeSaid] | None = None,
        token: str = "ya29.client-token",
        answers: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.google = GeminiUpstream(gemini or (lambda body: GeminiSaid(text="hi")), answers)
        self.anthropic = AnthropicUpstream(claude or (lambda body: ClaudeSaid(text="hi")))
        self.token = token
        self.api_key = api_key  # express mode's key (``x-goog-api-key``), accepted too when set
        self.tokens: list[str | None] = []
        self.paths: list[str] = []
        self.app = Starlette(
            routes=[
                Route(LOCATED + "/google/models/{call}", self._gemini, methods=["POST"]),
                Route("/{version}/publishers/google/models/{call}", self._gemini, methods=["POST"]),
                Route(LOCATED + "/anthropic/models/{call}", self._claude, methods=["POST"]),
            ]
        )

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every model request received, Gemini's then Anthropic's (see their upstreams)."""
        return self.google.requests + self.anthropic.requests

    def _refused(self, request: Request, known: Callable[[str], bool]) -> Response | None:
        given = request.headers.get("authorization")
        self.tokens.append(given.removeprefix("Bearer ") if given else None)
        self.paths.append(request.url.path)
        keyed = self.api_key is not None and request.headers.get("x-goog-api-key") == self.api_key
        if given != f"Bearer {self.token}" and not keyed:
            return google_error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
        model = request.path_params["call"].partition(":")[0]
        if not known(model):
            return google_error(404, f"Publisher Model `{model}` was not found.", "NOT_FOUND")
        return None

    async def _gemini(self, request: Request) -> Response:
        return self._refused(request, lambda model: model.startswith("gemini-")) or await self.google._models(request)

    async def _claude(self, request: Request) -> Response:
        refused = self._refused(request, lambda model: model.startswith(("claude-", "count-tokens")))
        if refused is not None:
            return refused
        body: dict[str, Any] = orjson.loads(await request.body())
        if request.path_params["call"].startswith("count-tokens"):  # the model named in the body
            return await self.anthropic._count(request)
        if "model" in body or "anthropic_version" not in body:
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": "model: not permitted"}}
            return Response(orjson.dumps(error), 400, media_type="application/json")
        if body.get("stream", False) != request.path_params["call"].endswith(":streamRawPredict"):
            return google_error(400, "stream and method disagree", "INVALID_ARGUMENT")
        return await self.anthropic._messages(request)
