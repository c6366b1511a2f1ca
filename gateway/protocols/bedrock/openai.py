"""The Bedrock runtime's OpenAI-compatible APIs, guarded as OpenAI's own: Chat Completions
(``bedrock_chat``) and the Responses API (``bedrock_responses``).

The Bedrock runtime serves OpenAI's request and reply bodies beside InvokeModel and Converse:
``/openai/v1/chat/completions`` (also ``/v1/chat/completions``) and ``/openai/v1/responses``.
Clients point the openai SDK's base URL at the gateway's ``/bedrock/openai/v1``; the requests
go to the same runtime as InvokeModel's, signed the same way (``bedrock.protocol.UPSTREAM``:
the gateway's AWS credentials, a Bedrock API key, or the client's signature over its own
bytes). Each protocol is the chat or Responses package's roles under this declaration, as
Azure's are; errors are OpenAI's shape, which the SDK reads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.protocols.bedrock.protocol import MOUNT, UPSTREAM
from gateway.protocols.chat import protocol as chat
from gateway.protocols.declaration import Owned
from gateway.protocols.openai_objects import OWNED
from gateway.protocols.responses import protocol as responses
from gateway.protocols.roles import Adapter, Kind

__all__ = ["CHAT_KIND", "RESPONSES_KIND"]

ROOT = MOUNT + "/openai/v1"
# What the runtime's Responses API keeps: responses and conversations, read and deleted by id.
_KEPT = frozenset({"response", "conversation"})


def _never(body: Any) -> bool:
    """A recorded body is read as plain chat or Responses (``loopguard replay``): the same body."""
    return False


def _on_bedrock(kind: Owned) -> Owned:
    return replace(kind, collection=MOUNT + "/openai" + kind.collection)


CHAT_DECLARED = replace(
    chat.DECLARED,
    family="aws.bedrock.chat_completions",
    routes=(ROOT + "/chat/completions", MOUNT + "/v1/chat/completions"),
    upstream=UPSTREAM,
    owned=(),  # the runtime stores no chat completion
    other_methods=(),
    session_prefix=True,
    reads=_never,
)

RESPONSES_DECLARED = replace(
    responses.DECLARED,
    family="aws.bedrock.responses",
    routes=(ROOT + "/responses",),
    upstream=UPSTREAM,
    owned=tuple(_on_bedrock(kind) for kind in OWNED if kind.kind in _KEPT),
    stateless=(),
    reads=_never,
)


def _responses() -> Adapter:
    """The Responses protocol for one app (its own memory of replies and chains), on Bedrock."""
    return replace(responses.build(), name="bedrock_responses", declared=RESPONSES_DECLARED)


CHAT_KIND = chat.served_as("bedrock_chat", CHAT_DECLARED)
RESPONSES_KIND = Kind("bedrock_responses", RESPONSES_DECLARED, responses.REQUESTS, responses.KIND.authored, _responses)
