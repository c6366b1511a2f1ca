"""OpenAI Chat Completions as a guarded protocol: its declaration and the roles it plays.

Items are the request's ``messages`` (the system prompt among them). Every request carries its
whole conversation, so chat keeps no memory and has no history role: one adapter serves every
app. The roles live with what they know: ``parse`` (messages -> turns), ``rewrite`` (edits),
``answers`` (a whole reply), ``relay`` (the stream filter), ``replies`` (what the gateway writes).
"""

from __future__ import annotations

from dataclasses import replace

from gateway.protocols.adapters import model_named, openai_user, stream_asked
from gateway.protocols.chat import parse, rewrite, tokens
from gateway.protocols.chat.answers import REPLIES
from gateway.protocols.chat.relay import STREAMS
from gateway.protocols.chat.replies import AUTHORED
from gateway.protocols.declaration import Declaration, Owned, answer_id
from gateway.protocols.roles import Adapter, Kind, Requests

__all__ = ["ADAPTER", "KIND", "served_as"]

DECLARED = Declaration(
    family="openai.chat_completions",
    routes=("/v1/chat/completions", "/chat/completions"),
    id_fields=frozenset({"id", "tool_call_id"}),
    reads=lambda body: isinstance(body.get("messages"), list) and bool(body["messages"]),
    other_methods=("GET",),  # lists stored completions
    # A completion asked with ``store: true`` is kept: read, updated, deleted by its id.
    owned=(
        Owned(
            "chat_completion",
            "Chat completion",
            "chat_completion_not_found",
            "/v1/chat/completions",
            stored=lambda payload, reply: answer_id(reply) if payload.get("store") is True else None,
            object="chat.completion",
        ),
    ),
    session_prefix=False,  # its session keys were stored bare before other protocols came
)

REQUESTS = Requests(
    items_field="messages",
    payload_fields=("tools", "functions"),
    items=parse.items,
    conversation=parse.conversation,
    with_items=rewrite.with_messages,
    stream=stream_asked,
    model=model_named,
    user=openai_user,
    item_text=tokens.item_text,
)

# Immutable and memoryless: the same adapter in every app.
ADAPTER = Adapter("chat", DECLARED, REQUESTS, rewrite.EDITS, REPLIES, STREAMS, AUTHORED)


def _build() -> Adapter:
    return ADAPTER


KIND = Kind(ADAPTER.name, DECLARED, REQUESTS, AUTHORED, _build)


def served_as(name: str, declared: Declaration) -> Kind:
    """Chat's roles under another declaration (a cloud's OpenAI-compatible chat, on its own
    routes and upstream): memoryless as chat's, so one adapter serves every app."""
    adapter = replace(ADAPTER, name=name, declared=declared)
    return Kind(name, declared, REQUESTS, AUTHORED, lambda: adapter)
