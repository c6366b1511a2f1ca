"""required_tool: a turn that must call a given tool (the required-tool rule).

Models sometimes answer a data question from memory, or only describe a plan, instead of calling
the tool that has the data. Rules name the tool (and required arguments) a turn needs: keywords
in the user's input, a short or deictic follow-up after a message that showed the data, or an
affirmative answer to an offer to analyse it. Rules are domain-specific, so the detector ships
disabled with none (``policies/examples/portfolio.yaml`` has a portfolio assistant's).

:func:`resolve` finds the rule a turn's input matches; :func:`satisfied` says whether the run
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
from pydantic import Field, PrivateAttr

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.text import normalize
from gateway.detectors.turn_rules import Affirmative, FollowUp, Rule, Scalar, match, normalized, tag_pattern
from gateway.trace.model import ToolEvent, Trace, Turn
from gateway.trace.pairing import is_genuine_user

__all__ = [
    "NAME",
    "Affirmative",
    "Expectation",
    "FollowUp",
    "RequiredToolSettings",
    "Rule",
    "detect",
    "finding",
    "resolve",
    "satisfied",
]

NAME = "required_tool"


class RequiredToolSettings(DetectorSettings):
    enabled: bool = False  # rules are domain-specific: nothing to enforce until a policy has some
    rules: tuple[Rule, ...] = ()  # tried in order; the first that matches decides
    context_messages: int = Field(default=4, ge=0)  # the 4 messages before the input, any role
    short_max_units: int = Field(default=8, ge=1)  # "short": CJK characters + other words
    memory_tags: tuple[str, ...] = ("relevant-memories",)  # recalled memory: never matched
    input_tags: tuple[str, ...] = ("current-user-message",)  # if present, only this is matched
    max_retries: int = Field(default=2, ge=0, le=10)  # re-asks, then a warning
    # Each message is read up to this many characters: a 5 MB tool result in the context must
    # not cost every request of the run a full scan.
    scan_chars: int = Field(default=65_536, ge=256)

    _memory_re: re.Pattern[str] | None = PrivateAttr(default=None)
    _input_re: re.Pattern[str] | None = PrivateAttr(default=None)
    _lowered: tuple[Rule, ...] = PrivateAttr(default=())

    def model_post_init(self, _context: object) -> None:
        self._memory_re = tag_pattern(self.memory_tags)
        self._input_re = tag_pattern(self.input_tags)
        self._lowered = tuple(normalized(rule) for rule in self.rules)

    def typed(self, text: str) -> str:
        """What the user typed: recalled memories removed, the input block alone if there is
        one, normalized (lower-case, trimmed, whitespace collapsed)."""
        text = text[: self.scan_chars]
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
    before = turns[max(0, user - settings.context_messages) : user] if settings.context_messages else ()
    context = "\n".join(settings.typed(t.text) for t in before)
    for rule in settings.compiled_rules:
        kind = match(rule, text, context, settings.short_max_units)
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
    return Finding(
        NAME,
        count,
        steps,
        (expectation.tool,),
        f"this request requires calling {expectation.call} ({expectation.rule} rule) and it has not been called",
        details=(("call", expectation.call),),
    )


# --- matching ---------------------------------------------------------------------------------


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
