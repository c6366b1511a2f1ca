"""The Anthropic Messages API as a guarded protocol: its declaration and the roles it plays.

Items are the request's ``messages``. The system prompt lives outside them: it is read into the
conversation from the payload, and a warning placed there travels in the item list as a
``SystemNote`` until ``with_items`` moves it into ``system``. Message threads keep a
conversation server-side: the history role (``threads.Threads``) holds this app's memory of
them, so each app builds its own adapter (``KIND.build``). The roles live with what they know:
``parse`` (messages -> turns), ``rewrite`` (edits), ``replies`` and ``answers`` (a whole reply,
what the gateway writes), ``assemble`` (the stream filter), ``thread`` (thread rules).
"""

from __future__ import annotations

from gateway.protocols.adapters import model_named, stream_asked
from gateway.protocols.anthropic import parse, rewrite, tokens
from gateway.protocols.anthropic.assemble import STREAMS
from gateway.protocols.anthropic.replies import AUTHORED, REPLIES
from gateway.protocols.anthropic.threads import Threads
from gateway.protocols.declaration import Declaration, Owned, UpstreamSpec, answer_id
from gateway.protocols.roles import Adapter, Kind, Requests

__all__ = ["KIND", "build"]

DECLARED = Declaration(
    family="anthropic.messages",
    routes=("/v1/messages", "/messages"),
    # The key goes as x-api-key (its SDK's ``ANTHROPIC_BASE_URL`` is the API root).
    upstream=UpstreamSpec(
        config="anthropic",
        default_base_url="https://api.anthropic.com",
        key_header="x-api-key",
        key_prefix="",
        credentials=("x-api-key", "authorization"),
        root_suffix="/v1",
    ),
    relays=("/v1/messages/{rest:path}", "/messages/{rest:path}"),  # count_tokens
    id_fields=frozenset({"id", "tool_use_id"}),
    auth_error_type="authentication_error",
    reads=parse.is_messages_body,
    # A thread's previous message; ``thread_not_found`` makes the SDK send the whole history.
    # Message batches (their ``results`` too) are kept per account.
    owned=(
        Owned("thread", "Thread message", "thread_not_found"),
        *(
            Owned("message_batch", "Message batch", "not_found_error", root + "/messages/batches", answer_id)
            for root in ("/v1", "")
        ),
    ),
    stateless=("POST /v1/messages/count_tokens", "POST /messages/count_tokens"),
)

REQUESTS = Requests(
    items_field="messages",
    payload_fields=("system", "tools"),
    items=parse.messages_of,
    conversation=parse.conversation,
    with_items=rewrite.with_messages,
    stream=stream_asked,
    model=model_named,
    user=parse.user,
    item_text=tokens.item_text,
)


def build() -> Adapter:
    """This protocol for one app, with its own memory of threads."""
    history = Threads().role()
    return Adapter("anthropic", DECLARED, REQUESTS, rewrite.EDITS, REPLIES, STREAMS, AUTHORED, history)


KIND = Kind("anthropic", DECLARED, REQUESTS, AUTHORED, build)
