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

import operator
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.wire import codec

# Conversations are found by a few windows of their bytes: the last ``_WINDOW`` bytes before
# each offset of ``_LADDER`` within the body's known part. Agents of one fleet send the same model,
# system prompt and tools, so their bodies open alike for tens of kilobytes; the windows further
# in tell them apart (another task, other results), however many share the opening. A body
# probes the offsets in order while some remembered body has the same window there: the entries
# met at the deepest offset share the most with it, and are tried first. ``bytes.startswith``
# then proves the match, at memory speed up to the first byte that differs; at most ``_PROBES``
# remembered bodies are compared per body (sessions whose windows all coincide: the same task
# sent again, one history forked).
_LADDER = tuple(1024 * 3**k // 2**k // 64 * 64 for k in range(28))  # 1 KB to 60 MB, each 1.5x the last
_WINDOW = 32
_PROBES = 32
# Shorter bodies are parsed whole: below about this size that costs less than finding and
# proving what is new (benchmarks/parsing.py).
SMALL = 16 * 1024

_Key = tuple[str, int, bytes]  # (items field, offset, the window ending there)


@dataclass(frozen=True, slots=True, eq=False)
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

    def keys(self, field: str) -> list[_Key]:
        """Where it is found: its windows at the offsets within its head."""
        return [(field, at, self.source[at - _WINDOW : at]) for at in _LADDER if at <= self.end]


class GrownBodies:
    def __init__(self, max_entries: int = 4096, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.hits = self.misses = 0
        self._bytes = 0
        self._entries: OrderedDict[_Body, str] = OrderedDict()  # least recently used first -> field
        self._found: dict[_Key, dict[_Body, None]] = {}  # window -> entries, oldest first

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._found.clear()
        self._bytes = 0

    def loads(self, body: bytes, field: str) -> Any:
        """``body`` parsed (``codec.loads``: raises ``codec.DecodeError``); ``field``: the
        payload field that holds the conversation's items."""
        return self.read(body, field)[0]

    def read(self, body: bytes, field: str) -> tuple[Any, int | None]:
        """``loads``, and where in ``body`` its last item ends when that is known (``appended``
        can then write items after it)."""
        if len(body) < SMALL:
            return codec.loads(body), None
        for entry in self._candidates(body, field):
            if body.startswith(entry.head):
                grown = _grown(body, entry, field)
                if grown is not None:
                    self.hits += 1
                    payload, successor = grown
                    self._forget(entry)
                    self._add(successor, field)
                    return payload, successor.end
        self.misses += 1
        payload = codec.loads(body)
        remembered = _remembered(body, payload, field)
        if remembered is None:
            return payload, None
        self._add(remembered, field)
        return payload, remembered.end

    def _candidates(self, body: bytes, field: str) -> list[_Body]:
        """Remembered bodies ``body`` may continue, those sharing its deepest window first."""
        met: list[dict[_Body, None]] = []
        for at in _LADDER:
            if at > len(body):
                break
            found = self._found.get((field, at, body[at - _WINDOW : at]))
            if not found:
                break
            met.append(found)
            if len(found) == 1:
                break  # deeper windows hold no other entry
        out: dict[_Body, None] = {}
        for found in reversed(met):
            for entry in reversed(found):  # newest first
                out[entry] = None
                if len(out) >= _PROBES:
                    return list(out)
        return list(out)

    def _add(self, entry: _Body, field: str) -> None:
        if len(entry.source) > self.max_bytes // 4:
            return  # one huge history would push out everyone else for one conversation
        self._entries[entry] = field
        self._bytes += len(entry.source)
        for key in entry.keys(field):
            self._found.setdefault(key, {})[entry] = None
        while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
            self._forget(next(iter(self._entries)))

    def _forget(self, entry: _Body) -> None:
        field = self._entries.pop(entry)
        self._bytes -= len(entry.source)
        for key in entry.keys(field):
            found = self._found.get(key)
            if found is not None:
                found.pop(entry, None)
                if not found:
                    del self._found[key]


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
