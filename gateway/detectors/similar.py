"""similar_repeat: the same tool with near-identical arguments, failing or returning the same.

WeClaw's approximate repeat (normalized edit distance, similarity > 0.85, e.g. `npm install`
retried with a growing list of flags) and the doom-loop guard's fuzzy match (character 3-gram
Jaccard >= 0.8 for arguments of >= 50 characters). Count = the latest call and its predecessors
of the same tool whose arguments are similar (each to the next one: "chain", or each to the
latest), with results that agree: all failed, or all the same result. Paginated reads, different
files and larger limits are near-identical too, but each returns something new, so they never
count. Nor do successful edits and writes (a checklist ticked item by item, one patch after
another answered "Success"): each changed a file, whatever its tool answers. Nor, unless ``results: any``, do calls that differ only in numbers standing on their own
(`solve.py --maze 3`, then `--maze 4`; `--lr 0.1`, then `--lr 0.01`): a batch over items or a
sweep, failing or not.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Literal

from pydantic import Field
from rapidfuzz.distance import Indel, Levenshtein

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import (
    chain,
    changed_a_file,
    comparable,
    failed,
    failed_or_same_result,
    has_chars,
    no_outcome,
    skipped,
    steps_of,
    window,
)
from gateway.detectors.values import differing_values, item_pair, numbers_only
from gateway.trace.model import ToolEvent, Trace

NAME = "similar_repeat"
Metric = Literal["indel", "levenshtein", "jaccard3"]


class SimilarRepeatSettings(DetectorSettings):
    warn_at: int | None = 3  # the 3rd near-identical call
    reject_at: int | None = None  # similarity is a guess: never blocks by default
    terminate_at: int | None = None
    exempt_tools: frozenset[str] = frozenset({"check_background_tasks"})  # polling
    window: int = Field(default=8, ge=2)  # WeClaw's window_size
    # WeClaw looks at the last calls in a row. A call in between breaks the run: small edits
    # separated by test runs are the edit/run-tests cycle, iteration rather than a loop.
    consecutive: bool = True
    # indel (rapidfuzz fuzz.ratio: appended flags cost once, not twice as in levenshtein);
    # levenshtein = 1 - distance / max length (WeClaw); jaccard3 = character 3-gram Jaccard.
    metric: Metric = "indel"
    min_similarity: float = Field(default=0.85, gt=0.0, le=1.0)  # WeClaw's threshold
    strict: bool = False  # WeClaw compares with ">" rather than ">="
    min_length: int = Field(default=0, ge=0)  # strict.yaml: 50 (shorter must match exactly)
    compare: Literal["chain", "latest"] = "chain"  # chain: neighbours, as flags drift
    # error_or_same: only failures or identical results count (pagination stays quiet);
    # any: arguments alone, as WeClaw and the doom-loop guard do.
    results: Literal["error_or_same", "any"] = "error_or_same"
    # ...and an identical success counts only if it says something: `mv`, `mkdir`, `git add`
    # print nothing and a write tool may answer a bare "OK" for every different file.
    min_result_chars: int = Field(default=16, ge=0)
    skip_polling: bool = True


def detect(trace: Trace, settings: SimilarRepeatSettings) -> Finding | None:
    if not trace.repeats(settings.window, tool_only=True):
        return None
    events = window(trace, settings.window)
    if skipped(events[-1], settings.exempt_tools, settings.skip_polling):
        return None
    latest = events[-1]
    if settings.consecutive and not _next_to_same_tool(events):
        return None
    similar = _similarity(settings)
    exempt, skip_polling = settings.exempt_tools, settings.skip_polling

    guarded = settings.results == "error_or_same"

    def is_member(event: ToolEvent, newest: ToolEvent) -> bool:
        anchor = newest if settings.compare == "chain" else latest
        return (
            event.tool == latest.tool
            and not skipped(event, exempt, skip_polling)
            and similar(event.args, anchor.args)
            and not _alternatives(event, newest)
            and not (guarded and (numbers_only(event.args, newest.args) or changed_a_file(event)))
        )

    if guarded and (not _informative(latest, settings.min_result_chars) or changed_a_file(latest)):
        return None
    outcome = _outcome(settings.min_result_chars) if guarded else no_outcome
    members = chain(events, is_member, outcome, consecutive=settings.consecutive, stop_on_progress=guarded)
    count, warn_only, counted = members.tally(settings)
    if count < 2:
        return None
    return Finding(
        NAME,
        count,
        steps_of(counted),
        (latest.tool,),
        f"`{latest.tool}` called {count} times with near-identical arguments "
        f"({settings.metric} similarity >= {settings.min_similarity:.2f})",
        warn_only=warn_only,
    )


def _next_to_same_tool(events: tuple[ToolEvent, ...]) -> bool:
    """Whether the nearest earlier call a consecutive chain does not step over (neutral ones,
    by name or by shape) is of the latest call's tool: any other call ends the chain before it
    has a second member, so nothing else needs to be compared."""
    tool = events[-1].tool
    for event in reversed(events[:-1]):
        if event.tool == tool:
            return True
        if not (event.neutral or event.neutral_guess):
            return False
    return False


def _alternatives(a: ToolEvent, b: ToolEvent) -> bool:
    """Retry with variation: the same fields with other values (an id, an amount, a payment
    method, one word of a command: `pytest -k roundtrip`, then `-k unicode`) answered by a
    different error each time. The agent is trying alternatives and learning something from
    each refusal; that is not a loop."""
    if a.args_hash == b.args_hash or not (failed(a) and failed(b)) or a.result_hash == b.result_hash:
        return False
    leaves = differing_values(a.args, b.args)
    if not leaves:
        return False
    return all(item_pair(x, y) for x, y in leaves)


def _informative(event: ToolEvent, min_chars: int) -> bool:
    """A failure, an unknown result (proposed, vetoed, missing), or a success with some text."""
    if comparable(event) is None or failed(event):
        return True
    return has_chars(event.result, min_chars) if event.result is not None else True


def _outcome(min_chars: int) -> Callable[[ToolEvent], Hashable | None]:
    def outcome(event: ToolEvent) -> Hashable | None:
        if not _informative(event, min_chars):
            return object()  # a silent success agrees with nothing, not even another one
        return failed_or_same_result(event)

    return outcome


def _similarity(settings: SimilarRepeatSettings) -> Callable[[str, str], bool]:
    threshold, strict, min_length = settings.min_similarity, settings.strict, settings.min_length
    score = _METRICS[settings.metric]

    def similar(a: str, b: str) -> bool:
        if a == b:
            return True
        if len(a) < min_length or len(b) < min_length:
            return False  # short arguments only match exactly
        value = score(a, b, threshold)
        return value > threshold if strict else value >= threshold

    return similar


def _jaccard3(a: str, b: str, _cutoff: float) -> float:
    """Character 3-gram Jaccard: |S1 & S2| / |S1 | S2| over the sets of 3-character slices."""
    sa, sb = _grams(a), _grams(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 1.0


def _grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)} or {text}


_METRICS: dict[str, Callable[[str, str, float], float]] = {
    "indel": lambda a, b, cutoff: Indel.normalized_similarity(a, b, score_cutoff=cutoff),
    "levenshtein": lambda a, b, cutoff: Levenshtein.normalized_similarity(a, b, score_cutoff=cutoff),
    "jaccard3": _jaccard3,
}
