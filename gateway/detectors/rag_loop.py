"""The agentic-RAG loop guard's decisions as pure functions over the iterations of one run.

``decide`` says whether to continue, taken right after an iteration is recorded, with the
duplicate-query check first; ``decisions`` replays a whole sequence, one decision per
iteration. The numbers come from :class:`gateway.detectors.retrieval.RetrievalSettings`, read
here through :class:`Limits` (the detector's module imports this one, never the reverse).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from gateway.detectors.text import jaccard, normalize, tokens


class Limits(Protocol):
    """The numbers the decisions read (``RetrievalSettings`` has them)."""

    @property
    def max_iterations(self) -> int: ...
    @property
    def min_confidence_improvement(self) -> float: ...
    @property
    def sufficient_confidence(self) -> float: ...
    @property
    def trend_tolerance(self) -> float: ...
    @property
    def duplicate_threshold(self) -> float: ...


class Decision(StrEnum):
    CONTINUE = "continue"
    STOP_MAX_ITER = "stop_max_iter"
    STOP_NO_PROGRESS = "stop_no_progress"
    STOP_DUPLICATE = "stop_duplicate"
    STOP_SUFFICIENT = "stop_sufficient"


@dataclass(frozen=True, slots=True)
class Iteration:
    query: str
    confidence: float | None  # None: no result yet, an error, or no number where configured
    step: int = 0


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    trend: str  # unknown | improving | stable | declining
    reason: str


def trend(confidences: Sequence[float], tolerance: float = 0.02) -> str:
    """The confidence trend: steps beyond +-tolerance, majority wins."""
    if len(confidences) < 2:
        return "unknown"
    steps = [_diff(b, a) for a, b in itertools.pairwise(confidences)]
    up = sum(d > tolerance for d in steps)
    down = sum(d < -tolerance for d in steps)
    return "declining" if down > up else "improving" if up > down else "stable"


def is_duplicate(query: str, earlier: Sequence[str], threshold: float = 0.9) -> bool:
    """A duplicate query: equal after normalization, or word-level Jaccard >= threshold
    (CJK-aware tokens, see gateway.detectors.text)."""
    text = normalize(query)
    seen = [normalize(q) for q in earlier]
    if text in seen:
        return True
    words = tokens(text)
    return any(jaccard(words, tokens(q)) >= threshold for q in seen)


def decide(iterations: Sequence[Iteration], s: Limits) -> Verdict:
    """Continue or stop after recording the latest iteration, with the duplicate check
    first (a repeated query is wasted whatever its confidence)."""
    latest, n = iterations[-1], len(iterations)
    known = [i.confidence for i in iterations if i.confidence is not None]
    flow = trend(known, s.trend_tolerance)
    if is_duplicate(latest.query, [i.query for i in iterations[:-1]], s.duplicate_threshold):
        return Verdict(Decision.STOP_DUPLICATE, flow, "the query repeats an earlier one")
    if n >= s.max_iterations:
        return Verdict(Decision.STOP_MAX_ITER, flow, f"reached the maximum of {s.max_iterations} iterations")
    if latest.confidence is None:
        return Verdict(Decision.CONTINUE, flow, "no confidence to judge yet")
    if latest.confidence >= s.sufficient_confidence:
        return Verdict(Decision.STOP_SUFFICIENT, "good", f"confidence {fmt(latest.confidence)} is sufficient")
    if flow == "declining":
        return Verdict(Decision.STOP_NO_PROGRESS, flow, "confidence is declining")
    if flow == "stable" and len(known) >= 2 and _diff(known[-1], known[-2]) < s.min_confidence_improvement:
        return Verdict(
            Decision.STOP_NO_PROGRESS, flow, f"confidence improved by less than {fmt(s.min_confidence_improvement)}"
        )
    return Verdict(Decision.CONTINUE, flow, "iterating normally")


def decisions(iterations: Sequence[Iteration], s: Limits) -> list[Verdict]:
    """The decision after each iteration, in order."""
    return [decide(iterations[:k], s) for k in range(1, len(iterations) + 1)]


def _diff(new: float, old: float) -> float:
    """Rounded, so that 0.52 - 0.50 is the 0.02 it reads as, not 0.020000000000000018."""
    return round(new - old, 9)


def fmt(value: float) -> str:
    """A confidence as texts show it: 0.45 -> "0.45", 0.3 -> "0.3" (3 decimals at most)."""
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"
