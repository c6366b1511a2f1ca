"""What the protocols' roles share, written once: request fields spelt alike, and the bounded
memory a protocol with server-kept history keeps per app.

Only rules that are the same in every protocol that uses them live here; a protocol writes its
own where its wire format says differently (Anthropic's end user, Gemini's model in the path).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson
import structlog

from gateway.state.base import ChainRecord, StateStore

__all__ = ["Recent", "model_named", "newest_within", "openai_user", "stored_record", "stream_asked"]


def newest_within(items: list[Any], max_bytes: int) -> int:
    """Where the newest of ``items`` that fit in ``max_bytes`` (as JSON) start: a server-side
    conversation's record keeps those."""
    sizes = [_size(item) for item in items]
    total, start = sum(sizes), 0
    while total > max_bytes and start < len(items):
        total -= sizes[start]
        start += 1
    return start


def _size(item: Any) -> int:
    try:
        return len(orjson.dumps(item))
    except (TypeError, orjson.JSONEncodeError):
        return len(str(item))


class Recent(OrderedDict[Any, Any]):
    """A bounded map of recent keys (oldest dropped first): facts about calls and responses a
    protocol saw that a later call needs but its arguments do not carry. Held by one app's
    adapter (``roles.Kind.build``), never by a module."""

    def __init__(self, limit: int = 4096) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any = None) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


async def stored_record(store: StateStore, key: str, unknown: Recent, event: str, **said: Any) -> ChainRecord | None:
    """The stored record a request's previous id names (``key``), or None when it is unknown,
    expired, or another client's: then the request is judged on what it carries alone, and
    that is logged once per key (``unknown`` remembers which were), as ``event`` with ``said``."""
    record = await store.response_chain(key)
    if record is None and key not in unknown:
        unknown.put(key)
        structlog.get_logger("loopguard").info(event, **said)
    return record


def stream_asked(payload: dict[str, Any]) -> bool:
    """``stream: true``: the OpenAI and Anthropic APIs spell it alike."""
    return payload.get("stream") is True


def model_named(payload: dict[str, Any]) -> str:
    """The body's ``model`` ("" when absent): the OpenAI and Anthropic APIs spell it alike."""
    model = payload.get("model")
    return model if isinstance(model, str) else ""


def openai_user(payload: dict[str, Any]) -> str | None:
    """OpenAI's end-user id (chat and Responses)."""
    user = payload.get("user")
    return user if isinstance(user, str) and user else None
