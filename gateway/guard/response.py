"""The response path: judge each tool call the model proposes before the agent can run it."""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, Judgement
from gateway.trace.builder import proposed_events
from gateway.trace.model import ToolCall, ToolEvent, Trace

_log = structlog.get_logger("loopguard")


@dataclass(frozen=True, slots=True)
class Refusal:
    call: ToolCall
    position: int  # index of the refused call within the model's round
    judgement: Judgement

    @property
    def terminate(self) -> bool:
        return self.judgement.action == Action.TERMINATE


class ProposalJudge:
    """Judges a round's calls in order, each as if appended to the executed history.

    Calls ``judge`` one at a time, as a stream completes them; the first refused call ends the
    round (the rest of that round's calls are aborted).
    """

    def __init__(self, policy: EffectivePolicy, trace: Trace) -> None:
        self.policy = policy
        self.trace = trace
        self.calls: list[ToolCall] = []
        self.events: tuple[ToolEvent, ...] = ()  # of ``calls``
        self.refusal: Refusal | None = None
        self.shadowed: list[Judgement] = []  # what shadow mode or max_action held back

    def judge(self, call: ToolCall, position: int) -> bool:
        """True to let the call through to the agent."""
        if self.refusal is not None:
            return False
        self.events += proposed_events(self.trace, (call,), self.policy.trace_settings, len(self.calls))
        self.calls.append(call)
        judgement = self.policy.judge_proposal(self.trace.with_events(self.events))
        if judgement.would >= Action.REJECT and judgement.action < Action.REJECT:
            self.shadowed.append(judgement)
        if judgement.action >= Action.REJECT:
            self.refusal = Refusal(call, position, judgement)
            return False
        return True
