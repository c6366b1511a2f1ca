"""What every detector shares: its settings base, the finding it returns, its registry entry.

A detector is a pure function ``detect(trace, settings) -> Finding | None``: no I/O, no globals,
deterministic. It answers one question: does the latest event of the trace continue a loop?
The policy engine (``gateway.policy.engine``) maps a finding's ``count`` to an action using the
settings' thresholds; detectors never decide actions themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from gateway.trace.model import Trace


class DetectorSettings(BaseModel):
    """Fields every detector accepts in a policy's ``detectors.<name>`` block."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    warn_at: int | None = None  # count at which to warn; None = never
    reject_at: int | None = None
    terminate_at: int | None = None
    exempt_tools: frozenset[str] = frozenset()

    def thresholds_for(self, finding: Finding) -> DetectorSettings:
        """The ladder ``finding.count`` is measured against (the policy engine asks). A finding
        with ``ladder="poll"`` uses this settings' ``poll_warn_at`` / ``poll_reject_at`` /
        ``poll_terminate_at``; findings without one use ``warn_at`` / ``reject_at`` / ``terminate_at``."""
        if not finding.ladder and not finding.warn_only:
            return self
        prefix = finding.ladder + "_" if finding.ladder else ""
        warn_at = getattr(self, prefix + "warn_at")
        if finding.warn_only:  # weaker evidence: the same ladder's warning, never more
            return DetectorSettings(warn_at=warn_at)
        return DetectorSettings(
            warn_at=warn_at,
            reject_at=getattr(self, prefix + "reject_at"),
            terminate_at=getattr(self, prefix + "terminate_at"),
        )


@dataclass(frozen=True, slots=True)
class Finding:
    detector: str  # registry name, e.g. "exact_repeat"
    count: int  # how many times the pattern has occurred, compared against the thresholds
    steps: tuple[int, ...]  # affected ToolEvent.step values
    tools: tuple[str, ...]
    description: str  # human-readable, English; templates may embed it
    ladder: str | None = None  # which threshold family applies (see DetectorSettings.thresholds_for)
    # Extra template values, e.g. (("query", "..."), ("confidence", "0.45")); language-neutral:
    # a value that names a term (e.g. "stop_max_iter") is translated by texts.TERMS.
    details: tuple[tuple[str, str], ...] = ()
    # The evidence may warn but never block: e.g. repeats interleaved with new reads, which might
    # have been the agent finding something out.
    warn_only: bool = False


S = TypeVar("S", bound=DetectorSettings)


@dataclass(frozen=True, slots=True)
class Detector(Generic[S]):
    name: str
    detect: Callable[[Trace, S], Finding | None]
    settings: type[S]
