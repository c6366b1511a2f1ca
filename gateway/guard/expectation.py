"""On the response path: a turn that requires a tool gets it, or a warning.

When the request's turn requires a tool (the ``required_tool`` detector's rules) that the run has
not called yet, a model answer without any tool call is held back: the gateway re-asks with a
corrective user message, at most ``max_retries`` times, then lets the last answer through with
a warning prepended to its content. An answer with tool calls goes out as is (the agent is still
working; the next request judges again). This module holds the decisions; the protocol adapter
writes the corrective entries and the warning, and ``gateway.pipeline.expect`` does the re-asks.

Policy modes: ``shadow`` changes nothing (no guard); ``max_action: warn`` skips the re-asks and
only prepends the warning.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.detectors import required_tool
from gateway.detectors.base import Finding
from gateway.guard.plan import RequestPlan
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, Judgement


@dataclass(frozen=True, slots=True)
class TurnGuard:
    """One request's expectation and how many plain answers the model has given so far. Frozen:
    a plain answer makes a new guard (``missed``), which the pipeline keeps in its place."""

    policy: EffectivePolicy
    expectation: required_tool.Expectation
    max_retries: int
    misses: int = 0

    def missed(self) -> TurnGuard:
        """The guard after one more plain answer."""
        return replace(self, misses=self.misses + 1)

    @property
    def may_retry(self) -> bool:
        """True while a corrective re-ask is still allowed for the plain answers so far."""
        return self.misses <= self.max_retries

    @property
    def finding(self) -> Finding:
        return required_tool.finding(self.expectation, max(self.misses, 1))

    def judgement(self, action: Action) -> Judgement:
        return Judgement(action, action, self.finding, (self.finding,))

    def correction(self) -> str:
        """The corrective message a re-ask adds after the model's plain answer."""
        return self.policy.render("reask", self.finding)

    def warning(self) -> str:
        return self.policy.render("warn", self.finding)


def for_plan(plan: RequestPlan) -> TurnGuard | None:
    """The guard for this request, or None: no rules, shadow mode, nothing required, or the run
    already made the call (then nothing is held, streams included)."""
    settings = plan.policy.detectors.get(required_tool.NAME)
    if not isinstance(settings, required_tool.RequiredToolSettings) or plan.policy.shadow:
        return None
    expectation = required_tool.resolve(plan.trace.turns, settings)
    if expectation is None or required_tool.satisfied(expectation, plan.trace.events):
        return None
    retries = settings.max_retries if plan.policy.max_action >= Action.REJECT else 0
    return TurnGuard(plan.policy, expectation, retries)
