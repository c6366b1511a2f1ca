"""Small builders for detector tests: agent histories written as (tool, args, result) steps.

A step is ``(tool, args, result)`` (``result`` None = no result) or a list of them for one
round of parallel calls; ``args`` is a dict (sent as JSON text) or raw text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Union

from gateway.detectors import REGISTRY
from gateway.detectors.base import DetectorSettings, Finding
from gateway.policy.actions import Action, action_for
from gateway.trace.builder import build_trace, proposed_events
from gateway.trace.model import Conversation, ToolCall, Trace, Turn
from gateway.trace.settings import TraceSettings

Step = tuple[str, Any, str | None]
DEFAULTS: dict[str, DetectorSettings] = {name: d.settings() for name, d in REGISTRY.items()}


def args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def conversation(
    *steps: Step | Sequence[Step],
    user: str = "please do the task",
    tools: Iterable[str] | None = None,
    prefix: Sequence[Turn] = (),
) -> Conversation:
    turns: list[Turn] = list(prefix)
    turns.append(Turn(len(turns), "user", user))
    n = 0
    for step in steps:
        round_ = list(step) if isinstance(step, list) else [step]
        calls = []
        for tool, args, _ in round_:
            n += 1
            calls.append(ToolCall(f"call_{n}", tool, args_text(args)))
        turns.append(Turn(len(turns), "assistant", "", tuple(calls)))
        for call, (_, _, result) in zip(calls, round_):
            if result is not None:
                turns.append(Turn(len(turns), "tool", result, tool_call_id=call.id))
    return Conversation(tuple(turns), frozenset(tools) if tools is not None else None)


def trace_of(*steps: Step | Sequence[Step], settings: TraceSettings | None = None, **kw: Any) -> Trace:
    return build_trace(conversation(*steps, **kw), settings or TraceSettings())


def propose(trace: Trace, tool: str, args: Any, settings: TraceSettings | None = None) -> Trace:
    call = ToolCall(f"proposed_{trace.total_events + 1}", tool, args_text(args))
    return trace.with_events(proposed_events(trace, (call,), settings or TraceSettings()))


def prefix(trace: Trace, k: int) -> Trace:
    """The trace as it looked after its first ``k`` events (the request path at that point)."""
    events = trace.events[:k]
    rounds = events[-1].round if events else 0
    return replace(trace, events=events, rounds=rounds)


def paced(trace: Trace) -> Trace:
    """The trace with every call marked as waiting first (what the trace builder marks for
    `sleep N && ...` and for a poll right after a sleep or wait call)."""
    return replace(trace, events=tuple(replace(e, paced=True) for e in trace.events))


def detect(name: str, trace: Trace, settings: DetectorSettings | None = None) -> Finding | None:
    return REGISTRY[name].detect(trace, settings or DEFAULTS[name])


def action(name: str, trace: Trace, settings: DetectorSettings | None = None) -> Action:
    settings = settings or DEFAULTS[name]
    finding = detect(name, trace, settings)
    if finding is None:
        return Action.PASS
    return action_for(settings.thresholds_for(finding), finding.count)


def actions(trace: Trace, settings: Mapping[str, DetectorSettings] | None = None) -> dict[str, Action]:
    """Every registry detector's action on ``trace``, PASS ones left out."""
    settings = settings or DEFAULTS
    found = {name: action(name, trace, settings[name]) for name in REGISTRY}
    return {name: a for name, a in found.items() if a is not Action.PASS}


def count(name: str, trace: Trace, settings: DetectorSettings | None = None) -> int:
    """The finding's count; 0 when there is no finding."""
    finding = detect(name, trace, settings)
    return finding.count if finding is not None else 0
