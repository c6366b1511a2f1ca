"""What to do with a judged reply, as data: the one decision core every front end applies.

The gateway's pipeline (JSON and SSE replies) and the LiteLLM guardrail read a reply their own
way and apply a decision their own way, but decide alike, here, with no transport in sight:

- ``judge_round``: every alternative answer's proposed calls judged on its own, in order, each
  as if appended to the executed history (the first refused call ends its answer's round);
- ``decide``: from that judged round, the policy and the re-asks spent so far, one ``Decision``:
  ``PASS`` (relay as it is), ``DROP`` (veto the refused call; the calls before it go to the
  agent, the rest are dropped), ``REASK`` (veto it and ask the model again) or ``TERMINATE``
  (end the run: a terminate-level refusal, or a model that insists on a refused call once the
  re-asks ran out); a terminate says how its final reply is written (``ending``);
- ``at_request``: the same for an executed history already at terminate level;
- ``observation`` / ``final_text``: the texts a veto shows the model and a terminate ends with.

A decision is acted on only when the whole round was refused (every answer lost all its calls):
otherwise some answer goes to the agent, and a re-ask would answer every alternative again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from gateway.guard.response import ProposalJudge, Refusal
from gateway.policy.engine import EffectivePolicy, Judgement
from gateway.trace.model import ToolCall, Trace

__all__ = [
    "ANSWER",
    "ERROR",
    "REPLY",
    "Decision",
    "Judged",
    "Move",
    "at_request",
    "decide",
    "ending",
    "final_text",
    "judge_round",
    "observation",
]

# How a terminate's final reply is written (``interventions.terminate.mode``): the model's own
# answer with tools closed, the policy's template, or the protocol's error.
ANSWER, REPLY, ERROR = "answer", "reply", "error"


class Move(StrEnum):
    """What happens to the reply (see the module); its value is what logs and tests read."""

    PASS = "pass"
    DROP = "drop"
    REASK = "reask"
    TERMINATE = "terminate"


@dataclass(frozen=True, slots=True)
class Judged:
    """One reply's proposed calls, judged. ``refusals`` and ``keep`` have one entry per
    alternative answer (chat choices; one for protocols without alternatives)."""

    refusals: tuple[Refusal | None, ...]
    keep: tuple[int, ...]  # how many of its calls each answer keeps (a prefix)
    whole_round: bool  # every answer proposed calls and lost all of them
    shadowed: tuple[Judgement, ...] = ()  # refusals shadow mode or max_action held back: audit only

    @property
    def refused(self) -> tuple[Refusal, ...]:
        """The refusals, the first answer's first: the one a decision acts on."""
        return tuple(r for r in self.refusals if r is not None)

    @classmethod
    def of(cls, judges: Sequence[ProposalJudge], proposed: Sequence[int], whole_round: bool | None = None) -> Judged:
        """From each answer's ``ProposalJudge`` and its number of proposed calls.
        ``whole_round``: as a stream filter saw it (None: every answer refused at its first call)."""
        refusals: list[Refusal | None] = []
        keep: list[int] = []
        shadowed: list[Judgement] = []
        for judge, count in zip(judges, proposed, strict=True):  # one plain pass: every reply runs it
            refusal = judge.refusal
            refusals.append(refusal)
            keep.append(count if refusal is None else refusal.position)
            shadowed += judge.shadowed
        if whole_round is None:
            whole_round = bool(refusals) and all(r is not None and not r.position for r in refusals)
        return cls(tuple(refusals), tuple(keep), whole_round, tuple(shadowed))


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do. ``judgement``: the deciding one (the acted-on refusal's, or the history's);
    ``others``: the other answers' refusals, audited, not acted on (a terminate does not audit
    them: the run ends on the first)."""

    move: Move
    judgement: Judgement | None = None
    refusal: Refusal | None = None
    others: tuple[Refusal, ...] = ()
    keep: tuple[int, ...] = ()
    insisted: bool = False  # a terminate because the re-asks ran out, not a terminate-level finding
    ending: str | None = None  # a terminate's final reply: ANSWER | REPLY | ERROR


PASS = Decision(Move.PASS)


def judge_round(policy: EffectivePolicy, trace: Trace, proposed: Sequence[Sequence[ToolCall]]) -> Judged:
    """Every answer's calls judged on its own (each answer is another reply to the same history)."""
    judges = []
    for calls in proposed:
        judge = ProposalJudge(policy, trace)
        for position, call in enumerate(calls):
            if not judge.judge(call, position):
                break
        judges.append(judge)
    return Judged.of(judges, [len(calls) for calls in proposed])


def decide(judged: Judged | None, policy: EffectivePolicy | None, reasks: int) -> Decision:
    """The move for a judged round, after ``reasks`` re-asks of this request."""
    refused = judged.refused if judged is not None else ()
    if not refused or policy is None:
        return PASS
    assert judged is not None
    first, others = refused[0], refused[1:]
    if not judged.whole_round or first.position > 0:
        return Decision(Move.DROP, first.judgement, first, others, judged.keep)
    if may_reask(policy, first, reasks):
        return Decision(Move.REASK, first.judgement, first, others, judged.keep)
    return Decision(
        Move.TERMINATE, first.judgement, first, others, judged.keep, insisted=not first.terminate, ending=ending(policy)
    )


def at_request(policy: EffectivePolicy, judgement: Judgement) -> Decision:
    """The executed history is at terminate level: end the run before the model is asked."""
    return Decision(Move.TERMINATE, judgement, ending=ending(policy))


def may_reask(policy: EffectivePolicy, refusal: Refusal, reasks: int) -> bool:
    """A reject-level refusal of a round's first call, while the re-ask budget lasts."""
    limit = policy.interventions.reject.max_reasks
    return not refusal.terminate and refusal.position == 0 and reasks < limit


def ending(policy: EffectivePolicy) -> str:
    return policy.interventions.terminate.mode


def observation(policy: EffectivePolicy, judgement: Judgement) -> str:
    """What the model is shown in a refused call's place (its error observation)."""
    return policy.render("reject", judgement.finding)


def final_text(policy: EffectivePolicy, trace: Trace, judgement: Judgement) -> str:
    """The template that ends a run (with what the run did so far)."""
    return policy.render("terminate", judgement.finding, progress=policy.progress(trace))
