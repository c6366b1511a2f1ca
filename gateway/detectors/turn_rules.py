"""The rules of the required_tool detector (the required-tool rule) and how an input matches them.

Phrases are normalized like the input once, when a policy loads (:func:`normalized`), so matching
a request is plain substring tests.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway.detectors.text import EDGE_PUNCTUATION, normalize, units

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


def match(rule: Rule, text: str, context: str, short_max: int) -> str | None:
    """Which trigger of ``rule`` the normalized input ``text`` matches, given the normalized
    ``context`` messages before it: keywords | followup | affirmative, or None."""
    if any(k in text for k in rule.keywords):
        return "keywords"
    follow = rule.followup
    if follow is not None and _any_in(follow.markers, context):
        is_short = units(text) <= short_max and _any_in(follow.short, text)
        if is_short or _any_in(follow.deictic, text):
            return "followup"
    yes = rule.affirmative
    if (
        yes is not None
        and text.strip(EDGE_PUNCTUATION) in yes.words
        and _any_in(yes.hints, context)
        and _any_in(yes.markers, context)
    ):
        return "affirmative"
    return None


def _any_in(needles: tuple[str, ...], haystack: str) -> bool:
    return any(n in haystack for n in needles)


def tag_pattern(tags: tuple[str, ...]) -> re.Pattern[str] | None:
    if not tags:
        return None
    names = "|".join(re.escape(t) for t in tags)
    # An unclosed block runs to the end of the message (a truncated memory dump still never counts).
    return re.compile(rf"<({names})\b[^>]*>(.*?)(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)


def normalized(rule: Rule) -> Rule:
    """Phrases normalized like the input once, at load, so matching is plain substring tests."""

    def low(items: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n for n in map(normalize, items) if n)

    follow, yes = rule.followup, rule.affirmative
    return rule.model_copy(
        update={
            "keywords": low(rule.keywords),
            "followup": follow
            and follow.model_copy(
                update={"short": low(follow.short), "deictic": low(follow.deictic), "markers": low(follow.markers)}
            ),
            "affirmative": yes
            and yes.model_copy(
                update={
                    "words": tuple(w.strip(EDGE_PUNCTUATION) for w in low(yes.words)),
                    "hints": low(yes.hints),
                    "markers": low(yes.markers),
                }
            ),
        }
    )
