"""Judging the calls a reply proposes, each as if appended to the executed history.

A unary reply is judged whole, every alternative answer (chat ``n > 1``) on its own; a stream
is judged call by call as the adapter's stream filter completes them (``StreamJudge``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from gateway.guard.decision import Judged, judge_round
from gateway.guard.response import ProposalJudge, Refusal
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.verdict import fail_open
from gateway.policy.actions import Action
from gateway.trace.model import ToolCall


def judge_reply(ex: Exchange, reply: dict[str, Any]) -> Judged | None:
    """None lets the reply through as it is (nothing refused, or the judge failed open)."""
    if ex.plan is None:
        return None
    started = time.perf_counter()
    try:
        judged = judge_round(ex.plan.policy, ex.plan.trace, ex.adapter.replies.proposed_calls(reply))
    except Exception:
        fail_open(ex, "response")
        return None
    finally:
        ex.clock.took(started)
    for held in judged.shadowed:
        ex.verdict.record(ex, held, held.action, "response")
    return judged if judged.refused else None


def record_dropped(ex: Exchange, refusals: Sequence[Refusal]) -> None:
    """The other answers' refused calls: each left out of its answer, which is what the audit
    and the headers say (``reject``), whatever level the call reached: the run goes on, so a
    terminate-level finding in a later answer never reports ``terminate``."""
    for other in refusals:
        ex.verdict.record(ex, other.judgement, Action.REJECT, "response")


class StreamJudge:
    """The stream filter's judge: one ProposalJudge per alternative answer (chat choice).
    Each re-ask needs judges over the extended history: ``renew``."""

    def __init__(self, ex: Exchange) -> None:
        self.ex = ex
        self.judges: dict[int, ProposalJudge] = {}
        self.closed = False  # tools are closed (a final answer is being written): refuse every call

    def __call__(self, call: ToolCall, position: int, choice: int = 0) -> bool:
        plan = self.ex.plan
        if self.closed:
            return False
        if plan is None:
            return True
        started = time.perf_counter()
        try:
            judge = self.judges.get(choice)
            if judge is None:
                judge = self.judges[choice] = ProposalJudge(plan.policy, plan.trace)
            return judge.judge(call, position)
        finally:
            self.ex.clock.took(started)

    def renew(self) -> None:
        self.judges = {}

    def close(self) -> None:
        self.closed = True

    def judged(self, whole_round: bool) -> Judged:
        """The round as judged so far; ``whole_round``: the filter withheld all of it
        (``StreamFilter.needs_decision``). Shadowed refusals are audited by ``record_shadowed``."""
        judges = [j for _, j in sorted(self.judges.items())]
        return Judged.of(judges, [len(j.calls) for j in judges], whole_round)

    @property
    def refusal(self) -> Refusal | None:
        """The refusal the pipeline acts on: the first answer's, else the first found."""
        refusals = self._refusals()
        return refusals[0] if refusals else None

    def record_others(self) -> None:
        """The other answers' refusals (withheld by the filter): audited, not re-asked."""
        record_dropped(self.ex, self._refusals()[1:])

    def record_shadowed(self) -> None:
        for judge in self.judges.values():
            for held in judge.shadowed:
                self.ex.verdict.record(self.ex, held, held.action, "response")

    def _refusals(self) -> list[Refusal]:
        return [j.refusal for _, j in sorted(self.judges.items()) if j.refusal is not None]
