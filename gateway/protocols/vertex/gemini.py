"""Gemini on Vertex AI (``vertex_gemini``): the Gemini API's bodies, replies and streams
(``gateway.protocols.gemini``) on Vertex's paths,
``/vertex/{version}/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent``
and ``:streamGenerateContent`` (``?alt=sse`` events, else one JSON array, as the Gemini API);
the same below ``/vertex/{version}/publishers/google/models/`` in express mode, whose API key
names the project.

The model and the reply's shape are in the path, read as the gemini adapter reads them; errors
are Google's (``{"error": {"code", "message", "status"}}``). Every request carries its whole
conversation: no history role.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.protocols.declaration import Declaration
from gateway.protocols.gemini import protocol as gemini
from gateway.protocols.roles import Adapter, Kind
from gateway.protocols.vertex import cloud

__all__ = ["KIND"]

NAME = "vertex_gemini"
METHODS = ("generateContent", "streamGenerateContent")

DECLARED = Declaration(
    family="vertex.gemini.generate_content",
    # Under a project and location, or without (express mode: an API key names the project);
    # then the same methods on any other resource (an endpoint, a tuned model, another
    # publisher's model): Vertex serves Gemini's bodies there too, judged alike.
    routes=(
        *(
            f"{cloud.MOUNT}{located}/publishers/google/models/{{model}}:{method}"
            for located in (cloud.LOCATED, "/{version}")
            for method in METHODS
        ),
        *(f"{cloud.MOUNT}/{{rest:path}}:{method}" for method in METHODS),
    ),
    upstream=cloud.UPSTREAM,
    price_prefix=cloud.PRICED,
    relays=cloud.RELAYS,
    id_fields=frozenset({"id"}),
    auth_error_type="authentication_error",
    stream_notes=False,  # google-genai reads a comment line as a JSON chunk
    stateless=cloud.STATELESS,
    unjudged=cloud.UNJUDGED,
    # No ``reads``: a recorded body is the Gemini API's own, replayed as that protocol's.
)


def at(scope: dict[str, Any]) -> Adapter:
    """The adapter bound to the request's path: the gemini adapter's binding, as this protocol."""
    return _as_vertex(gemini.at(scope))


def _as_vertex(adapter: Adapter) -> Adapter:
    return replace(adapter, name=NAME, declared=DECLARED, binds=at)


ADAPTER = _as_vertex(gemini.ADAPTER)


def _build() -> Adapter:
    return ADAPTER


KIND = Kind(NAME, DECLARED, ADAPTER.requests, ADAPTER.authored, _build)
