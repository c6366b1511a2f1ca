"""Loop detectors: pure functions over a Trace, one family per module.

``REGISTRY`` maps each detector's policy name to its entry, in priority order (on equal actions
the earlier one decides): result-inclusive evidence first, argument-only guesses last.
"""

from __future__ import annotations

from typing import Any

from gateway.detectors import (
    compaction,
    cycle,
    errors,
    judge,
    progress,
    repeat,
    required_tool,
    retrieval,
    rounds,
    similar,
    stagnation,
    target,
    turns,
    unknown,
    vetoed,
    warned,
)
from gateway.detectors.base import Detector, DetectorSettings, Finding
from gateway.detectors.compaction import PostCompactionSettings
from gateway.detectors.cycle import CycleSettings
from gateway.detectors.errors import ErrorRepeatSettings
from gateway.detectors.judge import LlmJudgeSettings
from gateway.detectors.progress import NoProgressSettings
from gateway.detectors.repeat import ExactRepeatSettings
from gateway.detectors.required_tool import RequiredToolSettings
from gateway.detectors.retrieval import RetrievalSettings
from gateway.detectors.rounds import ToolRoundsSettings
from gateway.detectors.similar import SimilarRepeatSettings
from gateway.detectors.stagnation import StagnationSettings
from gateway.detectors.target import TargetFailureSettings
from gateway.detectors.turns import CrossTurnSettings
from gateway.detectors.unknown import UnknownToolSettings
from gateway.detectors.vetoed import VetoedCallSettings
from gateway.detectors.warned import IgnoredWarningSettings

# Each detector reads its own settings class: the registry holds them side by side.
REGISTRY: dict[str, Detector[Any]] = {
    # Armed only right after a compaction, and then the strongest evidence (the loop survived
    # the compaction): first, so its reason, compaction_loop_persisted, is the one reported when
    # others also fire.
    compaction.NAME: Detector(compaction.NAME, compaction.detect, PostCompactionSettings),
    unknown.NAME: Detector(unknown.NAME, unknown.detect, UnknownToolSettings),
    # Its text (answer from the best iteration) is the most useful one for a retrieval tool.
    retrieval.NAME: Detector(retrieval.NAME, retrieval.detect, RetrievalSettings),
    progress.NAME: Detector(progress.NAME, progress.detect, NoProgressSettings),
    errors.NAME: Detector(errors.NAME, errors.detect, ErrorRepeatSettings),
    # Failures on one target with varying arguments: after the identical-call evidence.
    target.NAME: Detector(target.NAME, target.detect, TargetFailureSettings),
    # The same failure across user turns: after the in-run evidence, which names the run's loop.
    turns.NAME: Detector(turns.NAME, turns.detect, CrossTurnSettings),
    # A call refused earlier in the run, back after a detour: after the detectors that refused
    # it, so their count and reason are the ones reported while they still see the loop.
    vetoed.NAME: Detector(vetoed.NAME, vetoed.detect, VetoedCallSettings),
    # A warned pattern continued after its warning (Trace.warned, from the session's state).
    warned.NAME: Detector(warned.NAME, warned.detect, IgnoredWarningSettings),
    repeat.NAME: Detector(repeat.NAME, repeat.detect, ExactRepeatSettings),
    similar.NAME: Detector(similar.NAME, similar.detect, SimilarRepeatSettings),
    cycle.NAME: Detector(cycle.NAME, cycle.detect, CycleSettings),
    stagnation.NAME: Detector(stagnation.NAME, stagnation.detect, StagnationSettings),
    rounds.NAME: Detector(rounds.NAME, rounds.detect, ToolRoundsSettings),
    # Thresholds off by default: it acts on the response path (gateway.guard.expectation).
    required_tool.NAME: Detector(required_tool.NAME, required_tool.detect, RequiredToolSettings),
    # Opt-in: a model's verdict, asked off the request's path (gateway/judge); last, so any
    # detector that sees the loop in the trace itself is the one reported.
    judge.NAME: Detector(judge.NAME, judge.detect, LlmJudgeSettings),
}


def default_settings() -> dict[str, DetectorSettings]:
    """Each registered detector with its shipped defaults."""
    return {name: entry.settings() for name, entry in REGISTRY.items()}


def largest_window(settings: dict[str, DetectorSettings]) -> int:
    """The widest window the detectors look at: TraceSettings.horizon must be at least this."""
    return max((getattr(s, "window", 0) for s in settings.values()), default=0)


__all__ = [
    "REGISTRY",
    "CrossTurnSettings",
    "CycleSettings",
    "Detector",
    "DetectorSettings",
    "ErrorRepeatSettings",
    "ExactRepeatSettings",
    "Finding",
    "IgnoredWarningSettings",
    "LlmJudgeSettings",
    "NoProgressSettings",
    "PostCompactionSettings",
    "RequiredToolSettings",
    "RetrievalSettings",
    "SimilarRepeatSettings",
    "StagnationSettings",
    "TargetFailureSettings",
    "ToolRoundsSettings",
    "UnknownToolSettings",
    "VetoedCallSettings",
    "default_settings",
    "largest_window",
]
