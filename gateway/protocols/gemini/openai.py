"""The Gemini API's OpenAI-compatible Chat Completions (``gemini_chat``): OpenAI's bodies,
replies and streams at ``/v1beta/openai/chat/completions``, the openai SDK pointed at the
gateway's ``/v1beta/openai/``.

Sent to the Gemini API's upstream (``upstream.gemini_*``) with its credentials: the client's
key (the SDK sends it as a bearer token) or the operator's ``gemini_api_key`` in its place.
Errors are OpenAI's shape: the client is the openai SDK.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.protocols.chat import protocol as chat
from gateway.protocols.gemini import protocol as gemini

__all__ = ["KIND"]


def _never(body: Any) -> bool:
    """A recorded body is read as plain chat (``loopguard replay``): the same body."""
    return False


DECLARED = replace(
    chat.DECLARED,
    family="gemini.openai.chat_completions",
    routes=("/v1beta/openai/chat/completions",),
    upstream=gemini.DECLARED.upstream,
    owned=(),
    other_methods=(),
    session_prefix=True,
    reads=_never,
)

KIND = chat.served_as("gemini_chat", DECLARED)
