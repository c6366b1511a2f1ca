"""Judging the calls a reply proposes, each as if appended to the executed history.

A unary reply is judged whole, every alternative answer (chat ``n > 1``) on its own; a stream
is judged call by call as the adapter's stream filter completes them (``StreamJudge``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from gateway.guard.response import ProposalJudge, Refusal
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.verdict import fail_open
from gateway.trace.model import ToolCall


@dataclass(frozen=True, slots=True)
class Refused:
    """The refusals of one reply. ``first``: the one the pipeline acts on (the first answer's,
    else the first found); ``keep``: how many calls each answer keeps."""

    first: Refusal
    others: tuple[Refusal, ...]
    keep: tuple[int, ...]
    whole_round: bool  # every answer that proposed calls lost all of them: re-ask or terminate


def judge_reply(ex: Exchange, reply: dict[str, Any]) -> Refused | None:
    """None lets the reply through as it is (nothing refused, or the judge failed open)."""
    if ex.plan is None:
        return None
    started = time.perf_counter()
    try:
        proposed = ex.adapter.proposed_calls(reply)
        judges = [_judged(ex, calls) for calls in proposed]
    except Exception:  # noqa: BLE001 - fail-open: an odd reply goes to the agent untouched
        fail_open(ex, "response")
        return None
    finally:
        ex.clock.took(started)
    for judge in judges:
        for held in judge.shadowed:
            ex.verdict.record(ex, held, held.action, "response")
    refusals = [j.refusal for j in judges if j.refusal is not None]
    if not refusals:
        return None
    keep = tuple(j.refusal.position if j.refusal is not None else len(calls) for j, calls in zip(judges, proposed))
    whole = all(j.refusal is not None and j.refusal.position == 0 for j, calls in zip(judges, proposed) if calls)
    return Refused(refusals[0], tuple(refusals[1:]), keep, whole)


def _judged(ex: Exchange, calls: tuple[ToolCall, ...]) -> ProposalJudge:
    assert ex.plan is not None
    judge = ProposalJudge(ex.plan.policy, ex.plan.trace)
    for position, call in enumerate(calls):
        if not judge.judge(call, position):
            break
    return judge


class StreamJudge:
    """The stream filter's judge. Each re-ask needs a judge over the extended history: ``renew``."""

    def __init__(self, ex: Exchange) -> None:
        self.ex = ex
        self.current: ProposalJudge | None = None
        self.renew()

    def __call__(self, call: ToolCall, position: int) -> bool:
        if self.current is None:
            return True
        started = time.perf_counter()
        try:
            return self.current.judge(call, position)
        finally:
            self.ex.clock.took(started)

    def renew(self) -> None:
        plan = self.ex.plan
        self.current = ProposalJudge(plan.policy, plan.trace) if plan is not None else None

    @property
    def refusal(self) -> Refusal | None:
        return self.current.refusal if self.current is not None else None

    def record_shadowed(self) -> None:
        if self.current is not None:
            for held in self.current.shadowed:
                self.ex.verdict.record(self.ex, held, held.action, "response")
