"""Compaction tracking on the request path: did this session's history just get shorter?

Agents that run out of context summarize or truncate their history and carry on (a
"compaction"). Each request carries the whole history, so the gateway only has to remember
where the previous request of the session stood (a :class:`HistoryMark`: message count + prefix
hash). A request that is shorter than the previous one no longer extends it: the history was
compacted, and the tool calls made from there on are post-compaction calls, which the
``post_compaction`` detector watches (a loop that survives its own compaction is
ended with ``compaction_loop_persisted``). The compacted request's mark is kept as the session's
compaction marker while later requests extend it; a history that is rewritten without getting
shorter starts afresh. A shorter history is a compaction only with positive evidence
(:func:`compacted`): a new run of the same task also starts shorter, and must start afresh.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.guard.prefix import anchored, prefix_hashes_at
from gateway.state.base import HistoryMark, SessionState, VetoRecord
from gateway.trace.model import Turn

# How agents introduce the text that replaces their compacted turns ("Summary of the work so
# far", "This session is being continued from a previous conversation", "[context compacted]").
_SUMMARY = re.compile(
    r"\b(summary|summari[sz]ed?|summarizing|compacted|compaction|condensed|"
    r"continued from a previous|previous conversation|conversation so far|earlier conversation|"
    r"context (was|has been) (truncated|compressed|reset))\b",
    re.IGNORECASE,
)
_SUMMARY_CHARS = 600  # the introduction opens the message


@dataclass(frozen=True, slots=True)
class Tracked:
    compacted_at: int | None  # client message index where the post-compaction history begins
    compacted_now: bool  # this very request is the compacted one
    marker: HistoryMark | None  # the compaction marker that applies from now on
    marker_changed: bool  # ... and differs from the stored one (a write is due)
    hashes: Mapping[int, str]  # prefix hashes at this request's length and the vetoes' anchors
    # False when the request starts a new run of the task: shorter than the session's previous
    # request, with no evidence of a compaction (a history rewritten without getting shorter is
    # still the same run: vetoes anchored in what it kept still apply).
    continues: bool = True


def track(state: SessionState, turns: Sequence[Turn], length: int, digest: str, explicit: bool = True) -> Tracked:
    """Compare the request's history (``length`` client messages, prefix hash ``digest``) with
    the session's previous request and its compaction marker. Hashing beyond ``digest`` is
    only needed when the session has vetoed exchanges or a marker to check. ``explicit``: the
    client named the session (else it is a fingerprint of how the conversation starts)."""
    previous, marker = state.mark, state.compacted
    wanted = {r.anchor_len for r in state.vetoes}
    if previous is not None and length < previous.length:  # shorter: compacted, or a new run
        hashes = _hashes(turns, length, digest, wanted)
        if compacted(turns, explicit):
            return Tracked(length, True, HistoryMark(length, digest), True, hashes)
        return Tracked(None, False, None, marker is not None, hashes, False)  # a new run: start afresh
    if marker is not None:
        wanted |= {marker.length, previous.length if previous is not None else -1}
    hashes = _hashes(turns, length, digest, wanted)
    if marker is None:
        return Tracked(None, False, None, False, hashes)
    extends = previous is not None and hashes.get(previous.length) == previous.digest
    if extends and hashes.get(marker.length) == marker.digest:
        return Tracked(marker.length, False, marker, False, hashes)
    return Tracked(None, False, None, True, hashes)  # rewritten, not shorter: a fresh history


def compacted(turns: Sequence[Turn], explicit: bool) -> bool:
    """Positive evidence that a shorter history is a compaction, not a new run of the same task.

    A batch job, an eval harness or a cron agent starts every run with the same system prompt
    and task, so a shorter history alone proves nothing. Evidence: a summary message replacing
    earlier turns (any message but the conversation's opening system prompt and first user
    message, which a new run repeats; with an explicit session id the first user message may be
    the summary itself), or, with an explicit session id, work carried over (an assistant turn:
    a truncated history; a new run starts with no work done).
    """
    opening = _opening(turns, explicit)
    if any(
        i not in opening and _SUMMARY.search(t.text, 0, _SUMMARY_CHARS)
        for i, t in enumerate(turns)
        if t.role in ("system", "user", "assistant")
    ):
        return True
    return explicit and any(t.role == "assistant" for t in turns)


def _opening(turns: Sequence[Turn], explicit: bool) -> set[int]:
    """Positions of the first system message and (without an explicit id) the first user one."""
    roles = ("system",) if explicit else ("system", "user")
    first: dict[str, int] = {}
    for i, turn in enumerate(turns):
        if turn.role in roles and turn.role not in first:
            first[turn.role] = i
    return set(first.values())


def _hashes(turns: Sequence[Turn], length: int, digest: str, wanted: set[int]) -> Mapping[int, str]:
    found = prefix_hashes_at(turns, length, wanted - {length}) if wanted - {length} else {}
    return {**found, length: digest}


def shown_index(client_index: int, hashes: Mapping[int, str], vetoes: Sequence[VetoRecord]) -> int:
    """``client_index`` in the messages the model sees, where the vetoed exchanges that
    belong before it are re-inserted (``prefix.insert_vetoes``)."""
    return client_index + sum(len(r.messages) for r in vetoes if r.anchor_len < client_index and anchored(r, hashes))
