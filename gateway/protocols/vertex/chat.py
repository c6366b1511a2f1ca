"""Vertex AI's OpenAI-compatible Chat Completions (``vertex_chat``): OpenAI's bodies, replies
and streams on an endpoint's ``/chat/completions``.

Gemini and the partner models served as a service answer at
``/vertex/{version}/projects/{p}/locations/{l}/endpoints/openapi/chat/completions``, a model
deployed to an endpoint at ``.../endpoints/{id}/chat/completions``; the openai SDK's base URL is
the gateway's ``/vertex/{version}/projects/{p}/locations/{l}/endpoints/openapi``. The model is
the body's (``google/gemini-2.5-pro``); the token is the client's or the gateway's, as on every
Vertex route (``cloud.UPSTREAM``). Errors are OpenAI's shape: the client is the openai SDK.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.protocols.chat import protocol as chat
from gateway.protocols.vertex import cloud

__all__ = ["KIND"]


def _never(body: Any) -> bool:
    """A recorded body is read as plain chat (``loopguard replay``): the same body."""
    return False


DECLARED = replace(
    chat.DECLARED,
    family="vertex.openai.chat_completions",
    # Every endpoint, under any version and resource path: its chat completions.
    routes=(cloud.MOUNT + "/{rest:path}/chat/completions",),
    upstream=cloud.UPSTREAM,
    price_prefix=cloud.PRICED,
    owned=(),  # an endpoint stores no chat completion
    other_methods=(),
    session_prefix=True,
    reads=_never,
)

KIND = chat.served_as("vertex_chat", DECLARED)
