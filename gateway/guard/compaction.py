"""Compaction tracking on the request path: did this session's history just get shorter?

Agents that run out of context summarize or truncate their history and carry on (a
"compaction"). Each request carries the whole history, so the gateway only has to remember
where the previous request of the session stood (a :class:`HistoryMark`: message count + prefix
hash). A request that is shorter than the previous one no longer extends it: the history was
compacted, and the tool calls made from there on are post-compaction calls, which the
``post_compaction`` detector watches (seed 002: a loop that survives its own compaction is
ended with ``compaction_loop_persisted``). Later requests that extend the compacted one keep
the marker; a history that is rewritten without getting shorter starts afresh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.protocols.chat.rewrite import anchored, prefix_hashes_at
from gateway.state.base import HistoryMark, SessionState, VetoRecord
from gateway.trace.model import Turn


@dataclass(frozen=True, slots=True)
class Tracked:
    mark: HistoryMark  # to remember for the session's next request
    compacted_at: int | None  # client message index where the post-compaction history begins
    compacted_now: bool  # this very request is the compacted one
    hashes: Mapping[int, str]  # prefix hashes at the marks' positions and the vetoes' anchors


def track(state: SessionState, turns: Sequence[Turn], length: int) -> Tracked:
    """Compare the request's history (``length`` client messages) with the session's mark.
    One pass of hashing serves the mark and the vetoed exchanges' anchors."""
    previous = state.mark
    wanted = {length, *(r.anchor_len for r in state.vetoes)}
    if previous is not None:
        wanted |= {previous.length, previous.compacted_len or 0}
    hashes = prefix_hashes_at(turns, length, wanted)
    digest = hashes[length]
    if previous is None:
        return Tracked(HistoryMark(length, digest), None, False, hashes)
    if length < previous.length:  # shorter: summarized or truncated, so it cannot extend it
        return Tracked(HistoryMark(length, digest, length, digest), length, True, hashes)
    if hashes.get(previous.length) != previous.digest:  # rewritten, not shorter: a fresh history
        return Tracked(HistoryMark(length, digest), None, False, hashes)
    start = previous.compacted_len
    if start is not None and hashes.get(start) == previous.compacted_hash:
        return Tracked(HistoryMark(length, digest, start, previous.compacted_hash), start, False, hashes)
    return Tracked(HistoryMark(length, digest), None, False, hashes)


def shown_index(client_index: int, hashes: Mapping[int, str], vetoes: Sequence[VetoRecord]) -> int:
    """``client_index`` in the messages the model sees, where the vetoed exchanges that
    belong before it are re-inserted (``rewrite.insert_vetoes``)."""
    return client_index + sum(len(r.messages) for r in vetoes
                              if r.anchor_len < client_index and anchored(r, hashes))
