"""Per-conversation memory of the last request's parsed history.

Every request of a conversation repeats all earlier messages, so parsing and tracing each one
from scratch makes the guard pay for the whole history on every request. This cache keeps, per
conversation, the last request's messages and what was derived from them: a request whose
messages start with exactly those (compared by value, at C speed) parses only its new messages,
and the trace builder reuses the events of the unchanged prefix. Anything else (an edited or
compacted history, another conversation with the same opening) is parsed from scratch, so the
cache can only save work, never change a result. Bounded by entries and by body bytes.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.protocols.chat.parse import conversation_from_body, declared_tools, turn_from_message
from gateway.protocols.chat.rewrite import extend_history_hash, prefix_hashes_at
from gateway.trace.model import Conversation
from gateway.trace.settings import TraceSettings


@dataclass(slots=True)
class _Entry:
    messages: list[Any]
    conv: Conversation
    size: int
    hasher: Any  # blake2b state over all of ``messages`` (rewrite.extend_history_hash)
    settings: TraceSettings | None = None
    # The trace builder's events, keyed by the identity of turns this entry keeps alive: valid
    # only with these turns, these settings and these declared tools.
    events: dict[Any, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Parsed:
    conv: Conversation
    events: dict[Any, Any] | None  # the memo to build this conversation's trace with
    digest: str  # rewrite.prefix_hashes_at(conv.turns, n, (n,))[n] for all n client messages


class HistoryCache:
    def __init__(self, max_entries: int = 4096, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._bytes = 0
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()

    def parse(self, payload: dict[str, Any], size: int, settings: TraceSettings) -> Parsed:
        messages = payload.get("messages")
        key = _key(messages)
        if key is None:  # nothing to remember it by (no messages)
            conv = conversation_from_body(payload)
            count = len(messages) if isinstance(messages, list) else 0
            return Parsed(conv, None, prefix_hashes_at(conv.turns, count, (count,))[count])
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        if old is not None and _extends(old.messages, messages):
            self.hits += 1
            start = len(old.messages)
            conv = _extended(old.conv, payload, messages, start)
            hasher = _grow(old.hasher.copy(), conv, len(old.conv.turns), start, len(messages))
            # Stale keys (a result that arrived, steps renumbered by a new run) pile up slowly.
            keep = old.settings is settings and old.conv.tools == conv.tools and len(old.events) < 4096
            entry = _Entry(messages, conv, size, hasher, settings, old.events if keep else {})
        else:
            self.misses += 1
            conv = conversation_from_body(payload)
            hasher = _grow(hashlib.blake2b(digest_size=16), conv, 0, 0, len(messages))
            entry = _Entry(messages, conv, size, hasher, settings)
        self._store(key, entry)
        return Parsed(entry.conv, entry.events, entry.hasher.hexdigest() if messages else "")

    def _store(self, key: bytes, entry: _Entry) -> None:
        if entry.size > self.max_bytes // 4:
            return  # one huge history would push out everyone else for one conversation
        self._entries[key] = entry
        self._bytes += entry.size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.size


def _extends(old: list[Any], messages: list[Any]) -> bool:
    return len(messages) >= len(old) and messages[: len(old)] == old


def _extended(old: Conversation, payload: dict[str, Any], messages: list[Any], start: int) -> Conversation:
    new = tuple(t for i in range(start, len(messages)) if (t := turn_from_message(messages[i], i)) is not None)
    return Conversation(old.turns + new, declared_tools(payload))


def _grow(hasher: Any, conv: Conversation, first_turn: int, start: int, count: int) -> Any:
    return extend_history_hash(hasher, conv.turns[first_turn:], start, count)


def _key(messages: Any) -> bytes | None:
    """A conversation is known by how it opens (system prompt, first message)."""
    if not isinstance(messages, list) or not messages:
        return None
    try:
        return hashlib.blake2b(orjson.dumps(messages[:2]), digest_size=16).digest()
    except TypeError:
        return None
