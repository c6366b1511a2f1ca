"""The fleet's checks as steps of a policy's plan: judged with its detectors, so its ladder,
``max_action``, shadow mode, exemptions, messages and the veto machinery apply to them unchanged
(one place applies every action: the guard). Built once per policy, kept while it runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gateway.config import FleetConfig
from gateway.detectors.base import DetectorSettings, Finding
from gateway.fleet.checks import RECALLED, RETRY, TOOL_DOWN, recalled_loop, tool_down
from gateway.policy.engine import EffectivePolicy, Step, blocking
from gateway.trace.model import Trace

Check = Callable[[Trace, DetectorSettings], Finding | None]
_KEPT = 256  # policies (one per agents entry and profile): a handful per process


class Ladder:
    """``fleet.action``: reject warns at the failure and refuses the retry; warn only warns;
    none tells no agent (the fleet is still audited, counted and shown)."""

    def __init__(self, config: FleetConfig) -> None:
        steps: list[tuple[str, Check, DetectorSettings]] = []
        if config.enabled and config.action != "none":
            reject = RETRY if config.action == "reject" else None
            steps.append((TOOL_DOWN, tool_down, DetectorSettings(warn_at=1, reject_at=reject)))
        if config.enabled and config.recall:
            steps.append((RECALLED, recalled_loop, DetectorSettings(warn_at=1)))
        self._steps = steps
        self._policies: dict[int, tuple[EffectivePolicy, EffectivePolicy]] = {}

    def __call__(self, policy: EffectivePolicy) -> EffectivePolicy:
        """``policy`` with the fleet's checks after its own detectors (on an equal action its
        detectors decide: they name the loop the run itself shows)."""
        if not self._steps:
            return policy
        known = self._policies.get(id(policy))
        if known is not None and known[0] is policy:
            return known[1]
        steps = tuple(Step(name, detect, settings, policy.exempt_tools) for name, detect, settings in self._steps)
        plan = policy.plan + steps
        found = replace(policy, plan=plan, blocking_plan=blocking(plan))
        if len(self._policies) >= _KEPT:
            self._policies.clear()
        self._policies[id(policy)] = (policy, found)  # the policy kept: its id is never reused while listed
        return found
