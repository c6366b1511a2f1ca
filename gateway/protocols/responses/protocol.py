"""The OpenAI Responses API (``POST /v1/responses``) as a guarded protocol: its declaration and
the roles it plays.

Items are the request's ``input`` items (a string input is one user message); ``instructions``
is read as the system prompt. A request naming a ``previous_response_id`` or a ``conversation``
carries only its new items: the history role (``kept.Kept``) rebuilds the earlier ones. What
this protocol remembers between the calls of an exchange (``seen.Seen``, ``kept.Kept``) is one
app's: each app builds its own adapter (``KIND.build``).
"""

from __future__ import annotations

from gateway.protocols.adapters import model_named, openai_user, stream_asked
from gateway.protocols.declaration import Declaration
from gateway.protocols.openai_objects import OWNED, STATELESS
from gateway.protocols.responses import parse, rewrite, tokens
from gateway.protocols.responses.events import AUTHORED
from gateway.protocols.responses.kept import Kept
from gateway.protocols.responses.seen import Seen
from gateway.protocols.roles import Adapter, Kind, Requests

__all__ = ["KIND", "build"]

DECLARED = Declaration(
    family="openai.responses",
    routes=("/v1/responses", "/responses"),
    id_fields=frozenset({"id", "call_id"}),
    reads=lambda body: "messages" not in body and bool(parse.input_items(body)),
    # Stored responses and conversations, and every other object the OpenAI API keeps.
    owned=OWNED,
    stateless=STATELESS,
)

REQUESTS = Requests(
    items_field="input",
    payload_fields=("instructions", "tools"),
    items=parse.input_items,
    conversation=parse.conversation,
    with_items=rewrite.with_items,
    stream=stream_asked,
    model=model_named,
    user=openai_user,
    item_text=tokens.item_text,
)


def build() -> Adapter:
    """This protocol for one app, with its own memory of replies and chains."""
    seen = Seen()
    return Adapter(
        "responses",
        DECLARED,
        REQUESTS,
        seen.edits(),
        seen.replies(),
        seen.streams(),
        AUTHORED,
        Kept(seen).role(),
    )


KIND = Kind("responses", DECLARED, REQUESTS, AUTHORED, build)
