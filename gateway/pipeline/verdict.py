"""The strongest action applied to an exchange: audited as it is taken, told in the headers.

An action is recorded only once it is applied to traffic, so when the guard fails open (the
edit could not be made, the body goes out untouched) the headers and the audit say ``pass``,
never the action that was not applied; the failure itself is logged and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.audit.events import StoppedWork
from gateway.guard.audit import audit
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement

if TYPE_CHECKING:  # the exchange holds a verdict: imported for its type only
    from gateway.pipeline.exchange import Exchange

ACTION_HEADER = b"x-loopguard-action"
DETECTOR_HEADER = b"x-loopguard-detector"
TERMINATE_HEADER = b"x-loopguard-terminate"  # how a terminated run's last reply was written
PROFILE_HEADER = b"x-loopguard-profile"  # the agent profile the request was read through


@dataclass(slots=True)
class Verdict:
    action: Action = Action.PASS
    detector: str | None = None
    terminate: str | None = None  # answer | reply | error, once a terminate chose its reply
    profile: str = ""  # the agent profile the guard read the request through ("": none)

    def record(
        self, ex: Exchange, judgement: Judgement, action: Action, phase: str, terminate: str | None = None
    ) -> None:
        """Audit ``judgement`` acted on with ``action`` (``ex``: the exchange); the strongest
        action so far (the first detector at that level) is what the headers report.
        ``terminate``: how a terminate's final reply was written."""
        plan = ex.plan
        if plan is not None:
            audit(
                ex.log,
                judgement,
                phase=phase,
                session=plan.session,
                policy=plan.policy.name,
                action=action,
                bus=ex.gateway.audit,
                agent=plan.policy.agent,
                trace=plan.trace,
                request_id=ex.request_id,
                work=StoppedWork(ex.adapter.requests.model(ex.payload), plan.messages, ex.adapter.name),
                terminate=terminate,
                effective=plan.policy,
                protocol=ex.adapter.name,
            )
            fleet = ex.gateway.fleet
            if fleet is not None and action >= Action.REJECT and judgement.finding is not None:
                fleet.stopped(plan.agent, plan.trace, judgement.finding)  # the agent's next runs are told
        self.raise_to(action, judgement.detector)
        if terminate is not None:
            self.terminate = terminate

    def raise_to(self, action: Action, detector: str | None) -> None:
        """What the headers report, before the audit event can say how it ended (a stream's
        headers go out before its final answer is written)."""
        if action > self.action or (action == self.action and self.detector is None):
            self.action, self.detector = action, detector

    def headers(self, upstream_headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        out = [*upstream_headers, (ACTION_HEADER, self.action.label.encode())]
        if self.detector:
            out.append((DETECTOR_HEADER, self.detector.encode()))
        if self.terminate and self.action == Action.TERMINATE:
            out.append((TERMINATE_HEADER, self.terminate.encode()))
        if self.profile:
            out.append((PROFILE_HEADER, self.profile.encode()))
        return out

    def reset(self) -> None:
        self.action, self.detector, self.terminate, self.profile = Action.PASS, None, None, ""


def fail_open(ex: Exchange, where: str) -> None:
    """A guard step raised: the traffic goes on untouched; log it and count it."""
    ex.gateway.metrics.engine.fail_open_errors += 1
    ex.log.exception("fail_open", where=where, request_id=ex.request_id)
