"""Whole agent runs, written as scripts, judged by a shipped policy the way the gateway does.

A script is a sequence of: a string (a genuine user message), ``(tool, args, result)`` (one call
and its result), or a list of those (parallel calls of one round). ``judged`` runs the policy
after every executed call (the request path) and on every call as proposed (the response path).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gateway.policy.actions import Action
from gateway.policy.loader import load_shipped_policy
from gateway.trace.builder import build_trace, proposed_events
from gateway.trace.model import Conversation, ToolCall, Turn

SYSTEM = "You are a helpful agent."


def conversation(script: Sequence[Any], upto: int | None = None) -> tuple[Conversation, list[ToolCall]]:
    """The conversation after the first ``upto`` calls, and every call of the script."""
    turns = [Turn(0, "system", SYSTEM)]
    calls: list[ToolCall] = []
    for item in script:
        if isinstance(item, str):
            if upto is None or len(calls) < upto:
                turns.append(Turn(len(turns), "user", item))
            continue
        steps = item if isinstance(item, list) else [item]
        round_calls = []
        for tool, args, _ in steps:
            call = ToolCall(f"call_{len(calls) + 1}", tool, args if isinstance(args, str) else json.dumps(args))
            calls.append(call)
            round_calls.append(call)
        if upto is not None and len(calls) > upto:
            continue
        turns.append(Turn(len(turns), "assistant", "", tuple(round_calls)))
        for call, (_, _, result) in zip(round_calls, steps):
            turns.append(Turn(len(turns), "tool", result, tool_call_id=call.id))
    return Conversation(tuple(turns)), calls


def judged(script: Sequence[Any], pack: str = "default") -> list[tuple[str, str, str | None]]:
    """(phase, action, detector) for every point a gateway would judge the run: each call as
    proposed ("response"), then the history once it ran ("request")."""
    policy = load_shipped_policy(pack).resolve()
    settings = policy.trace_settings
    _, calls = conversation(script)
    out = []
    for k, call in enumerate(calls):
        before = build_trace(conversation(script, k)[0], settings)
        proposal = policy.judge_proposal(before.with_events(proposed_events(before, (call,), settings)))
        # A proposed call is only ever refused (warnings travel on the request path).
        refused = proposal.action >= Action.REJECT
        out.append(("response", proposal.action.label if refused else "pass", proposal.detector if refused else None))
        after = policy.judge(build_trace(conversation(script, k + 1)[0], settings))
        out.append(("request", after.action.label, after.detector))
    return out


def strongest(script: Sequence[Any], pack: str = "default") -> Action:
    return max((Action[a.upper()] for _, a, _ in judged(script, pack)), default=Action.PASS)


def first(script: Sequence[Any], action: str, pack: str = "default") -> tuple[int, str | None] | None:
    """(call number, detector) where the run first reached ``action`` (or more) on the request
    path; None when it never did."""
    level = Action[action.upper()]
    for i, (phase, label, detector) in enumerate(judged(script, pack)):
        if phase == "request" and Action[label.upper()] >= level:
            return i // 2 + 1, detector
    return None
