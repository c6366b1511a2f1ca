"""required_tool: a turn that must call a given tool (seed 000 section 6.1, resolve_turn_expectation).

Models sometimes answer a data question from memory, or only describe a plan, instead of calling
the tool that has the data. Rules name the tool (and required arguments) a turn needs: keywords
in the user's input, a short or deictic follow-up after a message that showed the data, or an
affirmative answer to an offer to analyse it. Rules are domain-specific, so the detector ships
disabled with none (``policies/examples/portfolio.yaml`` has the seed's).

:func:`resolve` is the seed's resolve_turn_expectation; :func:`satisfied` says whether the run
already made the call. The intervention is on the response path (``gateway.guard.expectation``:
re-ask a plain answer ``max_retries`` times, then warn the client). :func:`detect` serves the
usual thresholds, all off by default: count = tool calls this turn made without the required one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.text import EDGE_PUNCTUATION, normalize, units
from gateway.trace.builder import is_genuine_user
from gateway.trace.model import ToolEvent, Trace, Turn

NAME = "required_tool"
Scalar = str | int | float | bool | None


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FollowUp(_Block):
    """A contextual follow-up: a short input containing one of ``short`` ("体检", "健康吗"), or any
    input containing one of ``deictic`` ("分析这些", "这几只"), after a context marker."""

    short: tuple[str, ...] = ()
    deictic: tuple[str, ...] = ()
    markers: tuple[str, ...] = Field(min_length=1)  # in the previous messages ("持仓", "成本价")


class Affirmative(_Block):
    """A bare yes ("要", "好的", "可以", "行": the whole input) after a message that offered an
    analysis (``hints``) of the data (``markers``)."""

    words: tuple[str, ...] = Field(min_length=1)
    hints: tuple[str, ...] = Field(min_length=1)
    markers: tuple[str, ...] = Field(min_length=1)


class Rule(_Block):
    tool: str = Field(min_length=1)
    args: dict[str, Scalar] = Field(default_factory=dict)  # each must equal the call's argument
    keywords: tuple[str, ...] = ()  # substrings of the input
    followup: FollowUp | None = None
    affirmative: Affirmative | None = None

    @model_validator(mode="after")
    def _has_trigger(self) -> Rule:
        if not (self.keywords or self.followup or self.affirmative):
            raise ValueError("a rule needs keywords, followup or affirmative")
        return self


class RequiredToolSettings(DetectorSettings):
    enabled: bool = False  # rules are domain-specific: nothing to enforce until a policy has some
    rules: tuple[Rule, ...] = ()  # tried in order; the first that matches decides
    context_messages: int = Field(default=4, ge=0)  # seed: messages[:-1], limit 4, any role
    short_max_units: int = Field(default=8, ge=1)  # "short": CJK characters + other words
    memory_tags: tuple[str, ...] = ("relevant-memories",)  # recalled memory: never matched
    input_tags: tuple[str, ...] = ("current-user-message",)  # if present, only this is matched
    max_retries: int = Field(default=2, ge=0, le=10)  # seed 000 MAX_INCOMPLETE_TOOL_RETRIES
    # Each message is read up to this many characters: a 5 MB tool result in the context must
    # not cost every request of the run a full scan.
    scan_chars: int = Field(default=65_536, ge=256)

    _memory_re: re.Pattern[str] | None = PrivateAttr(default=None)
    _input_re: re.Pattern[str] | None = PrivateAttr(default=None)
    _lowered: tuple[Rule, ...] = PrivateAttr(default=())

    def model_post_init(self, _context: object) -> None:
        self._memory_re = _tag_re(self.memory_tags)
        self._input_re = _tag_re(self.input_tags)
        self._lowered = tuple(_lower(rule) for rule in self.rules)

    def typed(self, text: str) -> str:
        """What the user typed: recalled memories removed, the input block alone if there is
        one, normalized (seed 000: _strip_recall_context, lower, strip)."""
        text = text[:self.scan_chars]
        if self._memory_re is not None:
            text = self._memory_re.sub(" ", text)
        if self._input_re is not None:
            blocks = [m.group(2) for m in self._input_re.finditer(text)]
            text = "\n".join(blocks) if blocks else text
        return normalize(text)

    @property
    def compiled_rules(self) -> tuple[Rule, ...]:
        """The rules with every phrase normalized like the input (done once, at load)."""
        return self._lowered


@dataclass(frozen=True, slots=True)
class Expectation:
    tool: str
    args: tuple[tuple[str, Scalar], ...]
    rule: str  # keywords | followup | affirmative
    user_index: int  # message index of the input the expectation belongs to

    @property
    def call(self) -> str:
        """``portfolio(mode="diagnose")``: how texts name the required call."""
        inner = ", ".join(f"{k}={orjson.dumps(v).decode()}" for k, v in self.args)
        return f"{self.tool}({inner})"


def resolve(turns: Sequence[Turn], settings: RequiredToolSettings) -> Expectation | None:
    """The tool the current turn requires, from its last genuine user input and the
    ``context_messages`` messages before it (any role)."""
    if not settings.rules:
        return None
    user = next((i for i in range(len(turns) - 1, -1, -1) if is_genuine_user(turns[i])), None)
    if user is None:
        return None
    text = settings.typed(turns[user].text)
    if not text:
        return None
    before = turns[max(0, user - settings.context_messages):user] if settings.context_messages else ()
    context = "\n".join(settings.typed(t.text) for t in before)
    for rule in settings.compiled_rules:
        kind = _matches(rule, text, context, settings.short_max_units)
        if kind is not None:
            return Expectation(rule.tool, tuple(rule.args.items()), kind, turns[user].index)
    return None


def satisfied(expectation: Expectation, events: Sequence[ToolEvent]) -> bool:
    """Whether a call after the input (executed, or proposed now) is the required one. A vetoed
    call never ran, so it does not count."""
    return any(_fulfils(e, expectation) for e in _turn_calls(expectation, events))


def detect(trace: Trace, settings: RequiredToolSettings) -> Finding | None:
    thresholds = [t for t in (settings.warn_at, settings.reject_at, settings.terminate_at) if t is not None]
    if not thresholds or trace.latest is None:
        return None  # the default: only the response-path re-ask applies
    expectation = resolve(trace.turns, settings)
    if expectation is None:
        return None
    calls = _turn_calls(expectation, trace.events)
    if not calls or any(_fulfils(e, expectation) for e in calls) or len(calls) < min(thresholds):
        return None
    return finding(expectation, len(calls), tuple(e.step for e in calls))


def finding(expectation: Expectation, count: int, steps: tuple[int, ...] = ()) -> Finding:
    return Finding(NAME, count, steps, (expectation.tool,),
                   f"this request requires calling {expectation.call} ({expectation.rule} rule) "
                   f"and it has not been called", details=(("call", expectation.call),))


# --- matching --------------------------------------------------------------------------------


def _matches(rule: Rule, text: str, context: str, short_max: int) -> str | None:
    if any(k in text for k in rule.keywords):
        return "keywords"
    follow = rule.followup
    if follow is not None and _any_in(follow.markers, context):
        is_short = units(text) <= short_max and _any_in(follow.short, text)
        if is_short or _any_in(follow.deictic, text):
            return "followup"
    yes = rule.affirmative
    if yes is not None and text.strip(EDGE_PUNCTUATION) in yes.words:
        if _any_in(yes.hints, context) and _any_in(yes.markers, context):
            return "affirmative"
    return None


def _any_in(needles: tuple[str, ...], haystack: str) -> bool:
    return any(n in haystack for n in needles)


def _turn_calls(expectation: Expectation, events: Sequence[ToolEvent]) -> list[ToolEvent]:
    return [e for e in events if not e.vetoed and (e.proposed or e.message_index > expectation.user_index)]


def _fulfils(event: ToolEvent, expectation: Expectation) -> bool:
    if event.tool != expectation.tool:
        return False
    if not expectation.args:
        return True
    try:
        args: Any = orjson.loads(event.args)
    except orjson.JSONDecodeError:
        return False
    return isinstance(args, dict) and all(k in args and args[k] == v for k, v in expectation.args)


def _tag_re(tags: tuple[str, ...]) -> re.Pattern[str] | None:
    if not tags:
        return None
    names = "|".join(re.escape(t) for t in tags)
    # An unclosed block runs to the end of the message (a truncated memory dump still never counts).
    return re.compile(rf"<({names})\b[^>]*>(.*?)(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)


def _lower(rule: Rule) -> Rule:
    """Phrases normalized like the input once, at load, so matching is plain substring tests."""
    def low(items: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n for n in map(normalize, items) if n)

    follow, yes = rule.followup, rule.affirmative
    return rule.model_copy(update={
        "keywords": low(rule.keywords),
        "followup": follow and follow.model_copy(update={
            "short": low(follow.short), "deictic": low(follow.deictic), "markers": low(follow.markers)}),
        "affirmative": yes and yes.model_copy(update={
            "words": tuple(w.strip(EDGE_PUNCTUATION) for w in low(yes.words)),
            "hints": low(yes.hints), "markers": low(yes.markers)}),
    })
