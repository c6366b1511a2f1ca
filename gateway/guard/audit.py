"""One audit event per finding acted on (or that would have been, in shadow/capped mode)."""

from __future__ import annotations

from gateway.policy.actions import Action
from gateway.policy.engine import Judgement


def audit(log, judgement: Judgement, *, phase: str, session: str, policy: str, action: Action | None = None) -> None:
    finding = judgement.finding
    if finding is None:
        return
    applied = judgement.action if action is None else action
    log.info(
        "loop_intervention",
        phase=phase,  # "request" (executed history) or "response" (proposed call)
        session=session,
        policy=policy,
        detector=finding.detector,
        action=applied.label,
        would=judgement.would.label,
        shadow=judgement.shadow or applied < judgement.would,
        tool=",".join(finding.tools),
        count=finding.count,
        steps=list(finding.steps),
        description=finding.description,
    )
