"""``previous_response_id`` chains: a request carries only its new items.

The upstream keeps the earlier conversation; the gateway must see it too, or a looping agent
would look like a fresh one on every request. So after every stored response the gateway saves
what the upstream now holds for it (:class:`ChainRecord`: the conversation up to and including
the response's output, newest items first to go when it grows past the bounds), and a request
naming that response is judged on the record's items followed by its own.

The gateway may have withheld tool calls the upstream proposed in that response (a refused call
and the rest of its round). The upstream still expects an output for each of them, so the next
request in the chain carries the gateway's observation for every such call the client does not
answer itself (``owed``): the chain stays valid and the model sees why the call did not run.

A request with ``store: false`` carries everything and is never recorded; an unknown id (another
gateway, expired state) means judging only what the request carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from gateway.protocols.responses.parse import OUTPUT_TYPES, item_type
from gateway.protocols.responses.rewrite import veto_exchange
from gateway.state.base import ChainRecord
from gateway.trace.model import ToolCall

# Detectors read bounded windows of recent calls: a few hundred items is far more than they
# need, and the byte bound keeps one chain of large tool outputs from filling the store.
MAX_ITEMS = 256
MAX_BYTES = 256 * 1024


def previous_id(payload: Any) -> str | None:
    """The response this request continues, when the upstream is asked to remember it."""
    if not isinstance(payload, dict) or payload.get("store") is False:
        return None
    previous = payload.get("previous_response_id")
    return previous if isinstance(previous, str) and previous else None


def recorded(payload: Any) -> bool:
    """Does the upstream store the response to this request (so a later request may name it)?"""
    return isinstance(payload, dict) and payload.get("store") is not False


def with_owed(record: ChainRecord | None, items: list[Any]) -> list[Any]:
    """The request's items preceded by the outputs owed for calls the client never saw (those
    it answers itself excepted)."""
    if record is None or not record.owed:
        return items
    answered = {item.get("call_id") for item in items if item_type(item) in OUTPUT_TYPES}
    owed = [item for item in record.owed if isinstance(item, dict) and item.get("call_id") not in answered]
    return [*owed, *items] if owed else items


def owed_outputs(dropped: Iterable[ToolCall], observation: str, custom_ids: set[str]) -> tuple[Any, ...]:
    """The gateway's output for each withheld call (``custom_ids``: custom tool calls)."""
    return tuple(veto_exchange(call, observation, call.id in custom_ids)[1] for call in dropped if call.id)


def next_record(prior: ChainRecord | None, sent: list[Any], output: list[Any],
                owed: tuple[Any, ...] = ()) -> ChainRecord:
    """What the upstream holds after a response: the earlier chain, the items this request
    sent (the owed outputs and the gateway's edits included), the response's output."""
    earlier = list(prior.items) if prior is not None else []
    return ChainRecord(tuple(bounded([*earlier, *sent, *output])), owed)


def bounded(items: list[Any]) -> list[Any]:
    """The newest items within MAX_ITEMS and MAX_BYTES."""
    items = items[-MAX_ITEMS:]
    sizes = [_size(item) for item in items]
    total, start = sum(sizes), 0
    while total > MAX_BYTES and start < len(items):
        total -= sizes[start]
        start += 1
    return items[start:]


def _size(item: Any) -> int:
    try:
        return len(orjson.dumps(item))
    except (TypeError, orjson.JSONEncodeError):
        return len(str(item))
