"""A false-positive monitor: after a warn, did the run break the pattern or persist?

A warn is remembered per session (bounded LRU) and settled by what comes next:
- the session's next request judgement: the same detector and tool with a higher count means the
  warning was ignored (``persisted``); anything else means the run changed course (``recovered``);
- a veto or termination on the response path of the same pattern: ``persisted`` at once;
- no further request within ``settle_s`` (or evicted by the LRU): the agent stopped after the
  warning, which also breaks the pattern (``recovered``).
A high recovered share on warnings that did not need to happen is the signal to tune.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gateway.detectors.base import Finding
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement

Outcome = Callable[[str, str], None]  # (detector, "recovered" | "persisted")


@dataclass(slots=True)
class _Warn:
    detector: str
    tool: str
    count: int
    at: float


class RecoveryMonitor:
    def __init__(
        self,
        on_outcome: Outcome,
        *,
        max_sessions: int = 10_000,
        settle_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.on_outcome = on_outcome
        self.max_sessions = max_sessions
        self.settle_s = settle_s
        self.clock = clock
        self._pending: OrderedDict[str, _Warn] = OrderedDict()  # oldest warn first

    def __len__(self) -> int:
        return len(self._pending)

    def judged(self, session: str, judgement: Judgement) -> None:
        """Every request-path judgement of a session (the common case is a dict miss)."""
        if self._pending:
            self.expire()
            pending = self._pending.pop(session, None)
            if pending is not None:
                self._settle(pending, judgement.findings)
        finding = judgement.finding
        if judgement.action == Action.WARN and finding is not None:
            self._pending[session] = _Warn(finding.detector, ",".join(finding.tools), finding.count, self.clock())
            if len(self._pending) > self.max_sessions:
                self.on_outcome(self._pending.popitem(last=False)[1].detector, "recovered")

    def refused(self, session: str, detector: str, tool: str, count: int) -> None:
        """A proposed call vetoed or a run ended on the response path."""
        pending = self._pending.get(session)
        if pending is not None and _continues(pending, detector, tool, count):
            del self._pending[session]
            self.on_outcome(pending.detector, "persisted")

    def expire(self) -> None:
        """Settle warns with no follow-up within ``settle_s`` as recovered (the run ended)."""
        deadline = self.clock() - self.settle_s
        while self._pending:
            first = next(iter(self._pending.values()))
            if first.at > deadline:
                return
            self._pending.popitem(last=False)
            self.on_outcome(first.detector, "recovered")

    def _settle(self, pending: _Warn, findings: Iterable[Finding]) -> None:
        persisted = any(_continues(pending, f.detector, ",".join(f.tools), f.count) for f in findings)
        self.on_outcome(pending.detector, "persisted" if persisted else "recovered")


def _continues(pending: _Warn, detector: str, tool: str, count: int) -> bool:
    return detector == pending.detector and tool == pending.tool and count > pending.count
