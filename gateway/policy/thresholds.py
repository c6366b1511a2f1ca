"""Threshold ordering: warn < reject < terminate, corrected rather than refused (seed 002).

Seed 002's runtime raises criticalThreshold and globalCircuitBreakerThreshold when they are set
at or below the threshold they must exceed; we do the same, and say so in the log, because a
ladder whose reject fires before its warn would skip the model's chance to correct itself.
Any family of fields named ``<prefix>warn_at`` / ``<prefix>reject_at`` / ``<prefix>terminate_at``
is handled (e.g. no_progress's ``poll_*`` thresholds), so new detectors need nothing here.
"""

from __future__ import annotations

from structlog import get_logger as _log

from gateway.detectors.base import DetectorSettings
_LADDER = ("warn_at", "reject_at", "terminate_at")


def ladders(settings_type: type[DetectorSettings]) -> tuple[tuple[str, str, str], ...]:
    """The (warn, reject, terminate) field-name triples a settings class defines."""
    fields = settings_type.model_fields
    found = []
    for name in fields:
        if name.endswith("warn_at"):
            prefix = name.removesuffix("warn_at")
            triple = (prefix + "warn_at", prefix + "reject_at", prefix + "terminate_at")
            if all(field in fields for field in triple):
                found.append(triple)
    return tuple(found)


def ordered(values: list[int | None]) -> list[int | None]:
    """Raise each set threshold to one above the last set one before it; None (off) is skipped."""
    out: list[int | None] = []
    floor: int | None = None
    for value in values:
        if value is not None and floor is not None and value <= floor:
            value = floor + 1
        out.append(value)
        floor = value if value is not None else floor
    return out


def fix_order(settings: DetectorSettings, *, file: str, detector: str,
              agent: str | None = None) -> DetectorSettings:
    """``settings`` with every ladder strictly increasing; logs each correction it makes."""
    updates: dict[str, int | None] = {}
    for triple in ladders(type(settings)):
        old = [getattr(settings, name) for name in triple]
        new = ordered(old)
        if new != old:
            _log(__name__).warning("policy.thresholds_reordered", file=file, detector=detector,
                                   agent=agent, fields=list(triple), old=old, new=new)
            updates.update(zip(triple, new))
    if not updates:
        return settings
    # Re-validate rather than model_copy(update=...) so any derived state is recomputed.
    return type(settings).model_validate({**settings.model_dump(), **updates})


def warn_unreachable(settings: DetectorSettings, *, file: str, detector: str,
                     agent: str | None = None) -> None:
    """A detector counts within its window, so a threshold above the window can never fire:
    almost always a forgotten window after raising thresholds (e.g. OpenClaw's 30 in a window
    of 8). Logged, not refused: it may be a deliberate way to switch a level off."""
    size = getattr(settings, "window", None)
    if not settings.enabled or not isinstance(size, int):
        return
    for triple in ladders(type(settings)):
        for name in triple:
            value = getattr(settings, name)
            if value is not None and value > size:
                _log(__name__).warning("policy.threshold_unreachable", file=file, detector=detector,
                                       agent=agent, field=name, value=value, window=size)
