"""Where a conversation stands, protocol-neutral: hashes of its prefixes, and the vetoed
exchanges re-shown after the prefix they follow.

A prefix hash covers a canonical projection of each turn (role, text, calls, call id), never
the wire bytes: SDKs re-serialize history with extra null fields and different key order, and
the same history must hash alike in every protocol. Items are opaque here: a vetoed exchange is
the adapter's own entries (``Edits.veto_exchange``), inserted as they were stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from gateway.state.base import VetoRecord
from gateway.trace.model import Turn


def prefix_hashes(turns: Sequence[Turn], count: int) -> list[str]:
    """Rolling hash of the first ``k`` messages for k = 0..count, over a canonical projection
    of each turn (role, text, calls, call id): SDKs re-serialize history with extra null
    fields and different key order, which must not change the hash."""
    by_index: dict[int, list[Turn]] = {}
    for turn in turns:
        by_index.setdefault(turn.index, []).append(turn)
    hashes = [""]
    state = hashlib.blake2b(digest_size=16)
    for index in range(count):
        for turn in by_index.get(index, ()):
            state.update(_turn_bytes(turn))
        state.update(b"\x1e")
        hashes.append(state.copy().hexdigest())
    return hashes


def prefix_hashes_at(turns: Sequence[Turn], count: int, positions: Iterable[int]) -> dict[int, str]:
    """``prefix_hashes(turns, count)[k]`` for each k in ``positions`` (those within 0..count),
    without a digest per message: the text between two wanted positions is hashed in one
    update. Every request hashes its whole history (compaction tracking), so this stays cheap."""
    ordered = sorted(turns, key=_INDEX)  # stable: turns of one message keep their order
    out: dict[int, str] = {}
    state = hashlib.blake2b(digest_size=16)
    closed = 0  # messages whose "\x1e" separator is hashed
    j = 0
    for target in sorted({p for p in positions if 0 <= p <= count}):
        parts: list[str] = []
        while j < len(ordered) and ordered[j].index < target:
            turn = ordered[j]
            if turn.index > closed:
                parts.append("\x1e" * (turn.index - closed))
                closed = turn.index
            parts.append(_turn_text(turn))
            j += 1
        parts.append("\x1e" * (target - closed))
        closed = target
        state.update("".join(parts).encode("utf-8", "surrogatepass"))
        out[target] = state.copy().hexdigest() if target else ""
    return out


_INDEX = attrgetter("index")


def extend_history_hash(state: Any, turns: Sequence[Turn], start: int, count: int) -> Any:
    """Feed messages ``start``..``count - 1`` into the blake2b ``state`` (one that has hashed
    messages 0..start-1) in exactly the byte stream ``prefix_hashes_at`` hashes, so a history
    that only grew is hashed by its new messages alone. ``turns``: those messages' turns, in
    index order."""
    parts: list[str] = []
    closed = start
    for turn in turns:
        if turn.index >= count:
            break
        if turn.index > closed:
            parts.append("\x1e" * (turn.index - closed))
            closed = turn.index
        parts.append(_turn_text(turn))
    parts.append("\x1e" * (count - closed))
    state.update("".join(parts).encode("utf-8", "surrogatepass"))
    return state


def _turn_text(turn: Turn) -> str:
    calls = "\x1f".join(f"{c.id}\x1d{c.name}\x1d{c.arguments}" for c in turn.tool_calls) if turn.tool_calls else ""
    return f"{turn.role}\x00{turn.text}\x00{calls}\x00{turn.tool_call_id or ''}"


def _turn_bytes(turn: Turn) -> bytes:
    calls = "\x1f".join(f"{c.id}\x1d{c.name}\x1d{c.arguments}" for c in turn.tool_calls)
    fields = (turn.role, turn.text, calls, turn.tool_call_id or "")
    return "\x00".join(fields).encode("utf-8", "surrogatepass")


def insert_vetoes(
    messages: list[Any], hashes: list[str] | Mapping[int, str], records: Sequence[VetoRecord]
) -> list[Any]:
    """Show the model the exchanges it was refused, each right after the client messages of
    the request in which it was refused, i.e. just before the answer the model gave instead.
    ``hashes``: ``prefix_hashes`` or ``prefix_hashes_at`` (at least at the records' anchors)."""
    placed = [(record.anchor_len, order, record) for order, record in enumerate(records) if anchored(record, hashes)]
    if not placed:
        return messages
    out = list(messages)
    for position, _, record in sorted(placed, key=lambda p: (p[0], p[1]), reverse=True):
        out[position:position] = [dict(m) for m in record.messages]
    return out


def anchored(record: VetoRecord, hashes: list[str] | Mapping[int, str]) -> bool:
    """Does the request still contain the prefix the vetoed exchange follows?"""
    if isinstance(hashes, Mapping):
        return hashes.get(record.anchor_len) == record.anchor_hash
    return record.anchor_len < len(hashes) and hashes[record.anchor_len] == record.anchor_hash
