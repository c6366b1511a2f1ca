"""``Requests``: a request read into the neutral conversation, and its items written back.

Vocabulary: ``payload`` is the parsed request body (a dict), never mutated: every edit returns
new objects. ``items`` are the request's own ordered conversation entries (chat ``messages``,
Responses ``input`` items, Anthropic ``messages``, Gemini ``contents``); ``Turn.index`` points
into them, so an edit can name the entry it touches. Nothing outside a protocol looks inside an
item. Rule: never raise on a body it cannot read (return "nothing found" and let it through).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.protocols.base import ItemText
from gateway.trace.model import Conversation

Payload = dict[str, Any]


class Reads(Protocol):
    """(payload, items, start=0) -> the conversation: see ``Requests.conversation``."""

    def __call__(self, payload: Payload, items: list[Any], start: int = 0, /) -> Conversation: ...


@dataclass(frozen=True, slots=True)
class Requests:
    # The payload field that holds the items ("messages", "input", "contents").
    items_field: str
    # The payload fields ``conversation`` reads besides the items (declared tools, a system
    # prompt field): while they are unchanged, so are its head turns and declared tools.
    payload_fields: tuple[str, ...]
    # The request's own conversation entries ([] when absent or unreadable).
    items: Callable[[Payload], list[Any]]
    # (payload, items, start): the turns of ``items[start:]``, with the tools the payload
    # declares. ``Turn.index`` is the position in ``items``. With ``start == 0`` also the parts
    # outside ``items`` the model reads first (``system``, ``instructions``) as turns with index
    # -1; the history cache asks with ``start > 0`` to parse only what a conversation added.
    conversation: Reads
    # (payload, items): the payload carrying ``items`` in place of its own, every other field
    # unchanged. A protocol with server-kept history decides more (``History.outgoing``).
    with_items: Callable[[Payload, list[Any]], Payload]
    stream: Callable[[Payload], bool]  # the client asked for an event stream
    model: Callable[[Payload], str]  # "" when the request names none
    # The end user the body names (OpenAI's ``user``, Anthropic's ``metadata.user_id``), a
    # session source (``sessions.body_user``); None when absent or not a non-empty string.
    user: Callable[[Payload], str | None]
    # One conversation item's text pieces, for the savings token estimate.
    item_text: Callable[[Any], ItemText]
