"""Threshold ordering: warn < reject < terminate.

A ladder a block writes out of order (``warn_at: 8, reject_at: 5, terminate_at: 3``) is an
error: silently turning it into 8/9/10 hides a typo that changes what the gateway does. A
policy that wants the runtime correction instead (each threshold raised above the previous one)
sets ``allow_reorder: true``; the correction is then logged. A ladder that is out of order only
after an agents entry is merged over the global block (the entry sets ``warn_at: 8`` and
inherits ``reject_at: 5``) is corrected and logged the same way, since the entry changed one
field on purpose. A threshold below 1 is always an error (null switches a level off).
Any family of fields named ``<prefix>warn_at`` / ``<prefix>reject_at`` / ``<prefix>terminate_at``
is handled (e.g. no_progress's ``poll_*`` thresholds), so new detectors need nothing here.
"""

from __future__ import annotations

import itertools

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


def written_problems(
    written: object, settings_type: type[DetectorSettings], path: str, allow_reorder: bool
) -> list[tuple[str, str]]:
    """(key path, reason) for every threshold of ``written`` (a block's own detector settings)
    below 1, and every ladder it writes out of order unless ``allow_reorder``."""
    if not isinstance(written, dict):
        return []
    problems = []
    for triple in ladders(settings_type):
        values = [(name, written.get(name)) for name in triple]
        given = [(name, v) for name, v in values if isinstance(v, int) and not isinstance(v, bool)]
        problems += [
            (f"{path}.{name}", f"must be a count of at least 1 (null switches it off), not {v}")
            for name, v in given
            if v < 1
        ]
        if not allow_reorder and any(b <= a for (_, a), (_, b) in itertools.pairwise(given)):
            shown = ", ".join(f"{name}: {v}" for name, v in given)
            problems.append(
                (
                    f"{path}.{given[0][0]}",
                    f"thresholds must increase ({shown}); fix them, "
                    "or set allow_reorder: true to have each raised above the previous one",
                )
            )
    return problems


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


def fix_order(settings: DetectorSettings, *, file: str, detector: str, agent: str | None = None) -> DetectorSettings:
    """``settings`` with every ladder strictly increasing; logs each correction it makes."""
    updates: dict[str, int | None] = {}
    for triple in ladders(type(settings)):
        old = [getattr(settings, name) for name in triple]
        new = ordered(old)
        if new != old:
            _log(__name__).warning(
                "policy.thresholds_reordered",
                file=file,
                detector=detector,
                agent=agent,
                fields=list(triple),
                old=old,
                new=new,
            )
            updates.update(zip(triple, new))
    if not updates:
        return settings
    # Re-validate rather than model_copy(update=...) so any derived state is recomputed.
    return type(settings).model_validate({**settings.model_dump(), **updates})


def warn_unreachable(settings: DetectorSettings, *, file: str, detector: str, agent: str | None = None) -> None:
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
                _log(__name__).warning(
                    "policy.threshold_unreachable",
                    file=file,
                    detector=detector,
                    agent=agent,
                    field=name,
                    value=value,
                    window=size,
                )
