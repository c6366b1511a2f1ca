"""retrieval: an agentic-RAG loop that stops making progress (the agentic-RAG loop guard).

Each call to a configured retrieval tool is one iteration: its query (an argument) and the
confidence its result reports (a JSON path, or a regex over the text). After every iteration a
decision is taken (:func:`decide`): a duplicate query, ``max_iterations`` reached, a
sufficient confidence, a declining trend, or a stable one without ``min_confidence_improvement``
stops the loop; anything else continues.

Count = 1 for the iteration whose decision was the first stop, plus every retrieval call after
it (executed, vetoed or proposed now). So ``warn_at: 1`` tells the model to answer from the best
iteration as soon as a stop is decided, and ``reject_at: 2`` vetoes any further retrieval. A
proposed query that duplicates an executed one is a stop of its own (count 1). Reported only when
the latest call is a retrieval call. Off by default: there are no retrieval tools to watch.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
from pydantic import Field, PrivateAttr, field_validator

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.rag_loop import Decision, Iteration, Verdict, decide, decisions, fmt, is_duplicate, trend
from gateway.trace.model import Status, ToolEvent, Trace

__all__ = [
    "NAME",
    "Decision",
    "Iteration",
    "RetrievalSettings",
    "Verdict",
    "confidence_of",
    "decide",
    "decisions",
    "detect",
    "is_duplicate",
    "query_of",
    "trend",
]

NAME = "retrieval"


class RetrievalSettings(DetectorSettings):
    enabled: bool = False  # nothing to watch until a policy names its retrieval tools
    warn_at: int | None = 1  # the stop decision itself: answer from the best iteration
    reject_at: int | None = 2  # any retrieval call after it is vetoed
    terminate_at: int | None = None  # the veto's bounded re-asks already end an insisting model
    tools: frozenset[str] = frozenset()  # names of the retrieval tools
    query_arg: str = "query"  # argument holding the query (dot path); else the whole arguments
    confidence_path: str | None = "confidence"  # JSON path in the result, e.g. meta.score, hits.0.score
    confidence_regex: str | None = None  # tried when the path finds nothing; group 1 is the number
    max_iterations: int = Field(default=3, ge=1)  # at most 3 iterations per run
    min_confidence_improvement: float = Field(default=0.05, ge=0.0)  # less is no progress
    sufficient_confidence: float = Field(default=0.7, gt=0.0)  # high enough: stop retrieving
    trend_tolerance: float = Field(default=0.02, ge=0.0)  # a change within +-0.02 is flat
    duplicate_threshold: float = Field(default=0.9, gt=0.0, le=1.0)  # word-level Jaccard
    max_result_chars: int = Field(default=262_144, ge=64)  # larger results: regex on the head only

    _regex: re.Pattern[str] | None = PrivateAttr(default=None)

    @field_validator("confidence_regex")
    @classmethod
    def _one_group(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                groups = re.compile(pattern).groups
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
            if groups < 1:
                raise ValueError("needs a group around the number, e.g. 'confidence: ([0-9.]+)'")
        return pattern

    def model_post_init(self, _context: object) -> None:
        self._regex = re.compile(self.confidence_regex) if self.confidence_regex else None

    @property
    def confidence_re(self) -> re.Pattern[str] | None:
        return self._regex


def detect(trace: Trace, settings: RetrievalSettings) -> Finding | None:
    latest = trace.latest
    if latest is None or latest.tool not in settings.tools:
        return None
    calls = [e for e in trace.events if e.tool in settings.tools]
    done: list[Iteration] = []
    for position, event in enumerate(calls):
        if event.proposed or event.vetoed:
            continue  # never ran: not an iteration
        done.append(Iteration(query_of(event, settings), confidence_of(event, settings), event.step))
        verdict = decide(done, settings)
        if verdict.decision is not Decision.CONTINUE:
            return _finding(verdict, done, calls, len(calls) - position, settings)  # it + later
    if (latest.proposed or latest.vetoed) and is_duplicate(
        query_of(latest, settings), [i.query for i in done], settings.duplicate_threshold
    ):
        verdict = Verdict(Decision.STOP_DUPLICATE, "unknown", "the query repeats an earlier one")
        return _finding(verdict, done, calls, 1, settings)
    return None


# --- reading an iteration off a tool event ---------------------------------------------------


def query_of(event: ToolEvent, settings: RetrievalSettings) -> str:
    value = _path(_json(event.raw_args), settings.query_arg)
    if value is None:
        return event.args
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a lone surrogate in the arguments: escaped, not raised
        return json.dumps(value, ensure_ascii=True)


def confidence_of(event: ToolEvent, settings: RetrievalSettings) -> float | None:
    text = event.result
    if text is None or event.status != Status.OK:
        return None
    if settings.confidence_path and len(text) <= settings.max_result_chars:
        found = _number(_path(_json(text), settings.confidence_path))
        if found is not None:
            return found
    if settings.confidence_re is not None:
        match = settings.confidence_re.search(text, 0, settings.max_result_chars)
        return _number(match.group(1)) if match else None
    return None


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _path(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.lstrip("-").isdigit() and -len(data) <= int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _finding(
    verdict: Verdict, done: list[Iteration], calls: list[ToolEvent], count: int, settings: RetrievalSettings
) -> Finding:
    scored = [i for i in done if i.confidence is not None]
    best = max(scored, key=lambda i: i.confidence or 0.0) if scored else (done[-1] if done else None)
    query = best.query if best else ""
    confidence = fmt(best.confidence) if best and best.confidence is not None else "n/a"
    after = count - 1
    description = (
        f"retrieval {verdict.decision.value} ({verdict.reason}; trend {verdict.trend}) after "
        f"{len(done)} iterations; best query {query!r} at confidence {confidence}"
        + (f"; {after} retrieval calls since" if after else "")
    )
    tools = tuple(dict.fromkeys(e.tool for e in calls))
    return Finding(
        NAME,
        count,
        tuple(e.step for e in calls),
        tools,
        description,
        details=(("query", query), ("confidence", confidence), ("reason", verdict.decision.value)),
    )
