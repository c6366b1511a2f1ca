"""What the protocol adapters (``base.Adapter``) share, written once.

Only methods whose rule is the same in every protocol that uses them live here; an adapter
overrides what its wire format says differently (Anthropic's end user, for one).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson
import structlog

from gateway.state.base import ChainRecord, StateStore

__all__ = ["PayloadFields", "Recent", "WholeConversations", "newest_within", "stored_record"]


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


class Recent(OrderedDict):
    """A bounded map of recent keys (oldest dropped first): facts about calls and responses
    an adapter saw that a later method needs but its arguments do not carry."""

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


class PayloadFields:
    """Request fields all three OpenAI and Anthropic APIs spell alike: ``stream``, ``model``,
    ``user``; the request's path says nothing more (``at``)."""

    def at(self, scope: dict[str, Any]) -> Any:
        return self

    def stream(self, payload: dict[str, Any]) -> bool:
        return payload.get("stream") is True

    def model(self, payload: dict[str, Any]) -> str:
        model = payload.get("model")
        return model if isinstance(model, str) else ""

    def user(self, payload: dict[str, Any]) -> str | None:
        """OpenAI's end-user id (chat and Responses)."""
        user = payload.get("user")
        return user if isinstance(user, str) and user else None


class WholeConversations:
    """A protocol whose every request carries its whole conversation (chat, Messages): there is
    no server-side history to rebuild, and nothing to remember for a later request."""

    chains = False

    async def history(self, payload: dict[str, Any], store: StateStore, namespace: str) -> list[Any]:
        return []

    async def remember(
        self,
        sent: dict[str, Any],
        reply: dict[str, Any],
        store: StateStore,
        namespace: str,
        client: dict[str, Any] | None = None,
        untouched: bool = False,
    ) -> None:
        return None

    def restored(self, payload: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        return payload

    def references(self, payload: dict[str, Any]) -> list[tuple[str, str]]:
        return []

    def created(self, payload: dict[str, Any], reply: dict[str, Any]) -> list[tuple[str, str]]:
        return []
