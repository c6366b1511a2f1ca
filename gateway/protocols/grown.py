"""Reading a request body that continues one read before: only what it adds is parsed.

Every request of an agent's conversation repeats the whole history, and clients serialize it
the same way each time, so the next body starts with the previous body's bytes up to the end
of its last item (message, input item). For each conversation this keeps its last body (the
object itself: no copy of its bytes is made), where its last item ends, the fields before the
items and the parsed items; a body that starts with those bytes is read as:

    <the same bytes> ] <the rest of the object>            no new item
    <the same bytes> , <new items> ] <the rest of the object>

so only the new items and the fields after them are parsed, and the earlier items are the
objects read before (payloads are never mutated: every edit builds new objects). Anything else
(another conversation, an edited or compacted history, other whitespace or escapes, JSON only
the stdlib parser reads) is parsed whole, as before, and then remembered. The split is proved
once, when a conversation is first remembered: the fields before and after the items, parsed on
their own, rebuild exactly the payload parsed whole. Bounded by entries and by bytes.
"""

from __future__ import annotations

import hashlib
import operator
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.wire import codec

# Conversations are found by their first bytes (model, system prompt); those sharing them (a
# fleet running one agent) are told apart by comparing their remembered bytes, newest first.
_OPENING = 1024
_PER_OPENING = 32
# Shorter bodies are parsed whole: below about this size that costs less than finding and
# proving what is new (benchmarks/parsing.py).
SMALL = 16 * 1024


@dataclass(frozen=True, slots=True)
class _Body:
    source: bytes  # the body itself: kept whole, never copied (its head is a view of it)
    end: int  # where its last item ends (whitespace after it excluded): the head is source[:end]
    tail: bytes  # from the items' closing bracket to the end of the body
    before: dict[str, Any]  # the fields before the items
    after: dict[str, Any]  # the fields after them
    items: list[Any]

    @property
    def head(self) -> memoryview:
        """The body up to the end of its last item, without a copy: the next body of the
        conversation starts with it (``bytes.startswith`` compares a view at C speed)."""
        return memoryview(self.source)[: self.end]


class GrownBodies:
    def __init__(self, max_entries: int = 4096, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.hits = self.misses = 0
        self._bytes = 0
        self._entries = 0
        self._openings: OrderedDict[tuple[str, bytes], list[_Body]] = OrderedDict()

    def clear(self) -> None:
        self._openings.clear()
        self._bytes = self._entries = 0

    def loads(self, body: bytes, field: str) -> Any:
        """``body`` parsed (``codec.loads``: raises ``codec.DecodeError``); ``field``: the
        payload field that holds the conversation's items."""
        return self.read(body, field)[0]

    def read(self, body: bytes, field: str) -> tuple[Any, int | None]:
        """``loads``, and where in ``body`` its last item ends when that is known (``appended``
        can then write items after it)."""
        if len(body) < SMALL:
            return codec.loads(body), None
        key = (field, hashlib.blake2b(body[:_OPENING], digest_size=16).digest())
        known = self._openings.get(key)
        if known:
            for at, entry in enumerate(known):
                if body.startswith(entry.head):
                    grown = _grown(body, entry, field)
                    if grown is not None:
                        self.hits += 1
                        payload, successor = grown
                        self._replace(known, at, successor)
                        self._openings.move_to_end(key)
                        return payload, successor.end
        self.misses += 1
        payload = codec.loads(body)
        remembered = _remembered(body, payload, field)
        if remembered is None:
            return payload, None
        self._add(key, remembered)
        return payload, remembered.end

    def _replace(self, known: list[_Body], at: int, entry: _Body) -> None:
        self._bytes += len(entry.source) - len(known[at].source)
        del known[at]
        known.insert(0, entry)
        self._bound()

    def _add(self, key: tuple[str, bytes], entry: _Body) -> None:
        if len(entry.source) > self.max_bytes // 4:
            return  # one huge history would push out everyone else for one conversation
        known = self._openings.setdefault(key, [])
        self._openings.move_to_end(key)
        known.insert(0, entry)
        self._bytes += len(entry.source)
        self._entries += 1
        if len(known) > _PER_OPENING:
            self._bytes -= len(known.pop().source)
            self._entries -= 1
        self._bound()

    def _bound(self) -> None:
        while self._openings and (self._entries > self.max_entries or self._bytes > self.max_bytes):
            _, evicted = self._openings.popitem(last=False)
            self._entries -= len(evicted)
            self._bytes -= sum(len(e.source) for e in evicted)


def appended(body: bytes, end: int | None, payload: dict[str, Any], sent: dict[str, Any], field: str) -> bytes | None:
    """The body of ``sent`` written as ``body`` with items inserted after its last one (which
    ends at ``end``), when ``sent`` is ``payload`` with items appended and nothing else changed
    (a warning's anchor message): no re-serialization of the whole history. None otherwise."""
    if end is None or sent.keys() != payload.keys():
        return None
    old, new = payload.get(field), sent.get(field)
    if not (isinstance(old, list) and isinstance(new, list) and len(new) > len(old) > 0):
        return None
    if not all(map(operator.is_, old, new)) or any(sent[k] is not v for k, v in payload.items() if k != field):
        return None
    return b"".join((body[:end], b",", b",".join(map(codec.dumps, new[len(old) :])), body[end:]))


def _grown(body: bytes, entry: _Body, field: str) -> tuple[dict[str, Any], _Body] | None:
    """The payload of a body that starts with ``entry.head``, and the entry for its own items;
    None when the rest is not the end of the items and of the object."""
    start = entry.end
    rest = body[start:]
    stripped = rest.lstrip()
    try:
        if stripped == entry.tail:  # no new item, the same fields after them
            new: list[Any] = []
            end, tail, after = start, entry.tail, entry.after
        elif stripped[:1] == b"," and stripped.endswith(entry.tail):
            # New items, then the same fields after them (what agents send): the items between
            # are one array of their own; parsed, they prove the whole body reads as these parts.
            new = orjson.loads(b"[" + stripped[1 : len(stripped) - len(entry.tail)] + b"]")
            end, tail, after = _last_item_end(body, len(body) - len(entry.tail)), entry.tail, entry.after
        else:
            return _grown_other(body, entry, field, start + len(rest) - len(stripped), stripped)
    except orjson.JSONDecodeError:
        return None
    if not new and end != start:
        return None  # ", ]": no item after the comma
    items = entry.items + new  # a new list, of the same earlier items
    return {**entry.before, field: items, **after}, _Body(body, end, tail, entry.before, after, items)


def _grown_other(
    body: bytes,
    entry: _Body,
    field: str,
    offset: int,
    stripped: bytes,
) -> tuple[dict[str, Any], _Body] | None:
    """The same, when the fields after the items changed: the items' end found by the parser."""
    try:
        if stripped[:1] == b"]":
            new: list[Any] = []
            end, tail = entry.end, stripped
        elif stripped[:1] == b",":
            array, _ = _leading_array(b"[" + stripped[1:])
            if array is None:
                return None
            new = orjson.loads(array)
            closing = offset + len(array.rstrip()) - 1
            end, tail = _last_item_end(body, closing), body[closing:]
        else:
            return None
        after = _tail(tail[1:])
    except orjson.JSONDecodeError:
        return None
    if after is None or field in after:
        return None
    items = entry.items + new
    return {**entry.before, field: items, **after}, _Body(body, end, tail, entry.before, after, items)


def _last_item_end(body: bytes, closing: int) -> int:
    """Where the last item ends, given where the items' closing bracket is: before the blanks."""
    while closing > 0 and body[closing - 1] in _BLANKS:
        closing -= 1
    return closing


_BLANKS = b" \t\r\n"


def _remembered(body: bytes, payload: Any, field: str) -> _Body | None:
    """How to continue ``body`` (parsed whole to ``payload``): found where its items are, and
    proved by rebuilding the payload from its parts."""
    items = payload.get(field) if isinstance(payload, dict) else None
    if not isinstance(items, list) or not items:
        return None
    name = orjson.dumps(field)
    at = body.find(name)
    for _ in range(4):  # the first top-level occurrence is the one; nested ones fail the proof
        if at < 0:
            return None
        entry = _split(body, at, len(name), payload, field, items)
        if entry is not None:
            return entry
        at = body.find(name, at + 1)
    return None


def _split(body: bytes, at: int, size: int, payload: dict[str, Any], field: str, items: list[Any]) -> _Body | None:
    opening = body[at + size :].lstrip()
    if opening[:1] != b":":
        return None
    opening = opening[1:].lstrip()
    if opening[:1] != b"[":
        return None
    begin = len(body) - len(opening)  # where the items' opening bracket is
    try:
        array, tail = _leading_array(opening)
        head = body[:at].rstrip()
        if array is None or head[-1:] not in (b"{", b","):
            return None
        before = orjson.loads(head[:-1] + b"}") if head[-1:] == b"," else orjson.loads(head + b"}")
        after = _tail(tail)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(before, dict) or after is None or field in after or field in before:
        return None
    if {**before, field: items, **after} != payload:
        return None
    closing = begin + len(array.rstrip()) - 1
    return _Body(body, _last_item_end(body, closing), body[closing:], before, after, items)


def _leading_array(text: bytes) -> tuple[bytes | None, bytes]:
    """``text`` starts with a JSON array followed by more: (that array's bytes, the rest). The
    parser reads the array whole and stops where the rest begins."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if not exc.msg.startswith("unexpected content after"):
            return None, b""
        # The position counts characters of the decoded text, not bytes.
        at = exc.pos if text.isascii() else len(exc.doc[: exc.pos].encode())
        if not 0 < at < len(text):
            return None, b""
        return text[:at], text[at:]
    return None, b""  # the array is all there is: no object around it


def _tail(text: bytes) -> dict[str, Any] | None:
    """The fields after the items (``, "model": ...}`` or ``}``), or None for anything else."""
    text = text.lstrip()
    if text[:1] == b"}":
        return {} if not text[1:].strip() else None
    if text[:1] != b",":
        return None
    after = orjson.loads(b"{" + text[1:])
    return after if isinstance(after, dict) else None
