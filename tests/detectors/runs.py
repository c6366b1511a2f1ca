"""Whole agent runs, written as scripts, judged by a shipped policy the way the gateway does.

A script is a sequence of: a string (a genuine user message), ``(tool, args, result)`` (one call
and its result), or a list of those (parallel calls of one round). ``judged`` runs the policy
after every executed call (the request path) and on every call as proposed (the response path).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from gateway.policy.actions import Action
from gateway.policy.loader import load_shipped_policy as _load
from gateway.trace.builder import build_trace, proposed_events
from gateway.trace.model import Conversation, ToolCall, Turn

SYSTEM = "You are a helpful agent."


@lru_cache(maxsize=8)
def load_shipped_policy(pack: str = "default"):
    """A shipped pack, read once per process (its YAML costs more than judging a run)."""
    return _load(pack)


def conversation(
    script: Sequence[Any], upto: int | None = None, tools: Sequence[str] | None = None, system: str = SYSTEM
) -> tuple[Conversation, list[ToolCall]]:
    """The conversation after the first ``upto`` calls, and every call of the script; ``tools``:
    the tool names the request declares (an agent's, for its profile to be recognised)."""
    turns = [Turn(0, "system", system)]
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
    return Conversation(tuple(turns), frozenset(tools) if tools is not None else None), calls


def judged(
    script: Sequence[Any],
    pack: str = "default",
    tools: Sequence[str] | None = None,
    system: str = SYSTEM,
    user_agent: str = "",
) -> list[tuple[str, str, str | None]]:
    """(phase, action, detector) for every point a gateway would judge the run: each call as
    proposed ("response"), then the history once it ran ("request"). The policy reads the run
    through the profile of the agent that ``tools``, ``system`` and ``user_agent`` recognise."""
    first_conv, calls = conversation(script, tools=tools, system=system)
    policy = load_shipped_policy(pack).resolve().for_agent(first_conv, user_agent)
    settings = policy.trace_settings
    out = []
    for k, call in enumerate(calls):
        before = build_trace(conversation(script, k, tools, system)[0], settings)
        proposal = policy.judge_proposal(before.with_events(proposed_events(before, (call,), settings)))
        # A proposed call is only ever refused (warnings travel on the request path).
        refused = proposal.action >= Action.REJECT
        out.append(("response", proposal.action.label if refused else "pass", proposal.detector if refused else None))
        after = policy.judge(build_trace(conversation(script, k + 1, tools, system)[0], settings))
        out.append(("request", after.action.label, after.detector))
    return out


def strongest(script: Sequence[Any], pack: str = "default", **agent: Any) -> Action:
    return max((Action[a.upper()] for _, a, _ in judged(script, pack, **agent)), default=Action.PASS)


def first(script: Sequence[Any], action: str, pack: str = "default", **agent: Any) -> tuple[int, str | None] | None:
    """(call number, detector) where the run first reached ``action`` (or more) on the request
    path; None when it never did. ``agent``: ``judged``'s tools, system and user_agent."""
    level = Action[action.upper()]
    for i, (phase, label, detector) in enumerate(judged(script, pack, **agent)):
        if phase == "request" and Action[label.upper()] >= level:
            return i // 2 + 1, detector
    return None


def replayed(
    script: Sequence[Any],
    pack: str = "default",
    tools: Sequence[str] | None = None,
    system: str = SYSTEM,
    protocol: str = "chat",
) -> dict[str, tuple[int, str]]:
    """Where the gateway would first warn, reject and terminate (action -> (call number,
    detector)): the script, as ``protocol``'s request body (support.bodies), replayed through
    the server's own request path (session state: warnings remembered for the run, vetoes) and
    response path (each call judged as proposed), as ``loopguard replay`` does."""
    from support.bodies import BODIES

    from gateway.replay.run import Run, Segment
    from gateway.replay.runner import replay

    body = BODIES[protocol](script, tools, system)
    run = Run("script", "script", protocol, [Segment(body, protocol)], model="gemini-test")
    return dict(replay(run, load_shipped_policy(pack)).first)


def stopped_at(script: Sequence[Any], **agent: Any) -> int | None:
    """The call at which the gateway first refuses or ends the run, None when it never does."""
    first = replayed(script, **agent)
    stops = [first[a][0] for a in ("reject", "terminate") if a in first]
    return min(stops) if stops else None
