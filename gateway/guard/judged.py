"""The last judgement of a conversation, kept while what it judged stays the same.

Detectors are pure functions of the trace, and the policy engine of the detectors' findings, so
a request whose trace is the one judged last (the client sent the same conversation again: a
retry, a request that added nothing the trace reads) is judged as before without running a
detector. The history cache's memo of the conversation (``gateway.guard.history``) keeps it,
beside the trace builder's last build: a request costs its new events, and none when it has none.

"The same trace" is proved, never guessed: the events, the turns and the earlier turns' events
are the very objects judged last (the builder hands out its previous build's when nothing was
added), and every other field of the trace (what the session's state added: the compaction,
the calls warned about, the judge's verdict, the fleet's facts) is equal. A judgement during
which a detector failed (fail-open) is not kept: its failure is counted on every request.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from gateway.policy.engine import EffectivePolicy, Judgement, current_stats
from gateway.trace.model import Trace

_KEY = "judged"  # its key in a history memo
# Fields whose objects a later build shares only when nothing was added: compared by identity
# (by value they would cost a walk over the whole conversation).
_SHARED = ("events", "turns", "prior")
_VALUES = tuple(f.name for f in fields(Trace) if f.compare and f.name not in _SHARED)


@dataclass(frozen=True, slots=True)
class _Judged:
    policy: EffectivePolicy
    trace: Trace
    judgement: Judgement


def judge(policy: EffectivePolicy, trace: Trace, memo: dict[str, Any] | None) -> Judgement:
    """``policy.judge(trace)``, or the judgement ``memo`` kept of the same trace and policy."""
    if memo is not None:
        last = memo.get(_KEY)
        if isinstance(last, _Judged) and last.policy is policy and same(last.trace, trace):
            return last.judgement
    stats = current_stats()
    failures = stats.fail_open_errors
    judgement = policy.judge(trace)
    if memo is not None and stats.fail_open_errors == failures:
        memo[_KEY] = _Judged(policy, trace, judgement)
    return judgement


def same(a: Trace, b: Trace) -> bool:
    """Whether two traces are the same value, at the cost of a few comparisons."""
    if a is b:
        return True
    if not all(getattr(a, name) is getattr(b, name) for name in _SHARED):
        return False
    return all(getattr(a, name) == getattr(b, name) for name in _VALUES)
