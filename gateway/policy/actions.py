"""Action levels, ordered so that ``max()`` picks the strongest and a cap is a ``min()``."""

from __future__ import annotations

from enum import IntEnum

from gateway.detectors.base import DetectorSettings
from gateway.trace.model import VETO_MARKER


class Action(IntEnum):
    PASS = 0
    WARN = 1
    REJECT = 2
    TERMINATE = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Action:
        return cls[text.upper()]


def action_for(settings: DetectorSettings, count: int) -> Action:
    """The strongest action whose threshold ``count`` has reached (thresholds may be off)."""
    for action, threshold in (
        (Action.TERMINATE, settings.terminate_at),
        (Action.REJECT, settings.reject_at),
        (Action.WARN, settings.warn_at),
    ):
        if threshold is not None and count >= threshold:
            return action
    return Action.PASS


# Every error observation the gateway writes for a vetoed call starts with this marker; the
# trace builder recognises vetoed calls by it, so there is one constant, owned by the trace
# model, and the policy loader refuses a reject template that does not start with it.
REJECT_MARKER = VETO_MARKER
