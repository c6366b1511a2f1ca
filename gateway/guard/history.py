"""Per-conversation memory of the last request's parsed history.

Every request of a conversation repeats all earlier messages, so parsing and tracing each one
from scratch makes the guard pay for the whole history on every request. This cache keeps, per
conversation, the last request's items (messages, input items: whatever the protocol adapter
calls them) and what was derived from them: a request whose items start with exactly those
(compared by value, at C speed) parses only its new items through the adapter,
and the trace builder continues its previous build over the new turns only. Anything else (an edited or
compacted history, another conversation with the same opening) is parsed from scratch, so the
cache can only save work, never change a result. Bounded by entries and by body bytes.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.guard.prefix import extend_history_hash, prefix_hashes_at
from gateway.protocols.roles import Adapter
from gateway.trace.model import Conversation
from gateway.trace.settings import TraceSettings


@dataclass(slots=True)
class _Entry:
    messages: list[Any]  # the request's items
    conv: Conversation
    size: int
    hasher: Any  # blake2b state over all of ``messages`` (rewrite.extend_history_hash)
    fields: tuple[Any, ...]  # the payload's ``Requests.payload_fields`` values
    settings: TraceSettings | None = None
    # What was derived from the conversation and holds while it only grows: the trace
    # builder's last build (valid only with the turns this entry keeps alive and these
    # settings) and the session fingerprint (``state.session.fingerprint``).
    events: dict[Any, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Parsed:
    conv: Conversation
    events: dict[Any, Any] | None  # the memo to build this conversation's trace with
    digest: str  # prefix.prefix_hashes_at(conv.turns, n, (n,))[n] for all n items


_NO_FIELDS: dict[str, Any] = {}


class HistoryCache:
    def __init__(self, max_entries: int = 4096, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._bytes = 0
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        # Each entry's key by its protocol and the identity of its first item. A body that grows
        # a remembered one (``protocols.grown``) reuses the earlier items' objects, so its key is
        # found without serializing and hashing its opening; a stale identity (the entry gone,
        # the object freed and its id reused) fails the identity check and the key is computed.
        self._keys: dict[tuple[str, int], bytes] = {}

    def clear(self) -> None:
        self._entries.clear()
        self._keys.clear()
        self._bytes = 0

    def parse(
        self, adapter: Adapter, payload: dict[str, Any], messages: list[Any], size: int, settings: TraceSettings
    ) -> Parsed:
        """``messages``: the request's items as ``adapter`` reads them (``Requests.items``)."""
        key = self._key_of(adapter.name, messages)
        if key is None:  # nothing to remember it by (no items)
            conv = adapter.requests.conversation(payload, messages)
            count = len(messages)
            return Parsed(conv, None, prefix_hashes_at(conv.turns, count, (count,))[count])
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        fields = tuple(payload.get(name) for name in adapter.requests.payload_fields)
        if old is not None and old.fields == fields and _extends(old.messages, messages):
            self.hits += 1
            start = len(old.messages)
            # The same payload fields: the same head turns and declared tools, so only the new
            # items are read (from a payload with none of those fields).
            new = adapter.requests.conversation(_NO_FIELDS, messages, start)
            conv = Conversation(old.conv.turns + new.turns, old.conv.tools)
            hasher = _grow(old.hasher.copy(), conv, len(old.conv.turns), start, len(messages))
            entry = _Entry(
                messages, conv, size, hasher, fields, settings, old.events if old.settings is settings else {}
            )
        else:
            self.misses += 1
            conv = adapter.requests.conversation(payload, messages)
            hasher = _grow(hashlib.blake2b(digest_size=16), conv, 0, 0, len(messages))
            entry = _Entry(messages, conv, size, hasher, fields, settings)
        self._store(key, entry, adapter.name)
        return Parsed(entry.conv, entry.events, entry.hasher.hexdigest() if messages else "")

    def _key_of(self, protocol: str, messages: list[Any]) -> bytes | None:
        if not messages:
            return None
        key = self._keys.get((protocol, id(messages[0])))
        entry = self._entries.get(key) if key is not None else None
        if entry is not None and _same_opening(entry.messages, messages):
            return key
        return _key(protocol, messages)

    def _store(self, key: bytes, entry: _Entry, protocol: str) -> None:
        if entry.size > self.max_bytes // 4:
            return  # one huge history would push out everyone else for one conversation
        if len(self._keys) >= 2 * self.max_entries:  # stale identities of evicted entries
            self._keys.clear()
        self._keys[(protocol, id(entry.messages[0]))] = key
        self._entries[key] = entry
        self._bytes += entry.size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.size


def _same_opening(old: list[Any], messages: list[Any]) -> bool:
    """The same objects as the items ``_key`` reads (so the same key)."""
    count = min(2, len(messages))
    return min(2, len(old)) == count and all(old[i] is messages[i] for i in range(count))


def _extends(old: list[Any], messages: list[Any]) -> bool:
    return len(messages) >= len(old) and messages[: len(old)] == old


def _grow(hasher: Any, conv: Conversation, first_turn: int, start: int, count: int) -> Any:
    return extend_history_hash(hasher, conv.turns[first_turn:], start, count)


def _key(protocol: str, messages: list[Any]) -> bytes | None:
    """A conversation is known by its protocol and how it opens (system prompt, first message)."""
    if not messages:
        return None
    try:
        return hashlib.blake2b(orjson.dumps(messages[:2]), digest_size=16, person=protocol.encode()[:16]).digest()
    except TypeError:
        return None
