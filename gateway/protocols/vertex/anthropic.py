"""Anthropic's models on Vertex AI (``vertex_anthropic``): the Messages API's bodies, replies and
streams (``gateway.protocols.anthropic``) on Vertex's paths,
``/vertex/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict`` and
``:streamRawPredict``.

The body names no model (``anthropic_version: vertex-2023-10-16`` instead): the model and
whether the reply streams are the path's, bound per request. ``count-tokens:rawPredict`` (the
SDK's token count) is no model call: relayed unjudged. Errors are Anthropic's shape, as its
SDK reads them; Vertex has no message threads, so no history role.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gateway.protocols.anthropic import parse, rewrite
from gateway.protocols.anthropic import protocol as anthropic
from gateway.protocols.anthropic.answers import stream_answer, stream_prepend_text
from gateway.protocols.anthropic.replies import AUTHORED, REPLIES, termination_message, termination_stream
from gateway.protocols.anthropic.stream import ToolUseFilter
from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.bound import Bound
from gateway.protocols.declaration import Declaration
from gateway.protocols.roles import Adapter, Kind, Streams
from gateway.protocols.vertex import cloud

__all__ = ["KIND"]

NAME = "vertex_anthropic"
_STREAMING = "streamRawPredict"
_COUNT = "count-tokens"  # the token count's "model": no model call

DECLARED = Declaration(
    family="vertex.anthropic.messages",
    # Under a project and location as the SDKs send it, then under any other resource path.
    routes=tuple(
        f"{cloud.MOUNT}{located}/publishers/anthropic/models/{{model}}:{method}"
        for located in (cloud.LOCATED, "/{rest:path}")
        for method in ("rawPredict", _STREAMING)
    ),
    upstream=cloud.UPSTREAM,
    price_prefix=cloud.PRICED,
    id_fields=frozenset({"id", "tool_use_id"}),
    auth_error_type="authentication_error",
    # Its own version names it; a version the SDKs date (``2026-10-21``) is also Bedrock's,
    # read there: both are Anthropic bodies, judged alike.
    reads=lambda body: (
        str(body.get("anthropic_version")).startswith("vertex-")
        and "model" not in body
        and bool(parse.messages_of(body))
    ),
)


@dataclass(frozen=True, slots=True)
class Path(Bound):
    """What one request's path says: its model, and whether its reply streams."""

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> ToolUseFilter:
        return ToolUseFilter(judge, model=self.model, options=options)

    def adapter(self) -> Adapter:
        """The adapter for requests on this path."""
        requests = replace(anthropic.REQUESTS, stream=self.streams, model=self.model_of)
        authored = replace(
            AUTHORED,
            termination_reply=lambda text, payload: termination_message(text, self.model),
            termination_stream=lambda text, payload: termination_stream(text, self.model),
        )
        streams = Streams(self.stream_filter, stream_answer, stream_prepend_text)
        return Adapter(NAME, DECLARED, requests, rewrite.EDITS, REPLIES, streams, authored, binds=at)


def at(scope: dict[str, Any]) -> Adapter | None:
    """The adapter bound to the request's path; None (relayed unjudged) for the token count."""
    model, _, method = scope["path"].rpartition("/")[2].rpartition(":")
    if model == _COUNT:
        return None
    return Path(model, method == _STREAMING).adapter()


ADAPTER = Path().adapter()  # unbound: the routes' adapter, before a path binds it


def _build() -> Adapter:
    return ADAPTER


KIND = Kind(NAME, DECLARED, ADAPTER.requests, ADAPTER.authored, _build)
