"""The fleet's two checks: pure functions of a trace, like the detectors, reading what the
request path learnt from the fleet's shared state (``Trace.fleet``).

``tool_down``: the latest call reached a remote tool that is down for the tenant. Executed and
failed, count 1 (the ladder's warning: the model is told at once, with how many other sessions saw
the failure and the error); proposed again after a failure of this run, count 2 (the ladder's
refusal). A tool's first call in a run is never refused: it may work again, and a success lifts it
for everyone. A tool that is not down is never named.

``recalled_loop``: the latest call repeats, within this run, the pattern an earlier run of the same
agent was stopped for (the same call, or the same failure of the same tool); count: its earlier
occurrences in this run, so the first repeat counts 1. A run holding the stopped call is the
stopped run itself, whose own detectors speak for it.
"""

from __future__ import annotations

from gateway.detectors.base import DetectorSettings, Finding
from gateway.trace.fleet import StoppedLoop
from gateway.trace.model import Status, ToolEvent, Trace

TOOL_DOWN = "tool_down"
RECALLED = "recalled_loop"
RETRY = 2  # the count of a retry of a down tool after it failed in this run


def tool_down(trace: Trace, settings: DetectorSettings) -> Finding | None:
    facts, latest = trace.fleet, trace.latest
    if facts is None or not facts.down or latest is None or latest.vetoed:
        return None
    endpoint = latest.remote
    down = facts.down_tool(latest.tool, endpoint) if endpoint is not None else None
    if down is None or endpoint is None:
        return None
    steps: tuple[int, ...]
    if latest.proposed:
        failed = [e.step for e in trace.events if _failed_at(e, latest.tool, endpoint)]
        if not failed:
            return None
        count, steps = RETRY, (failed[-1], latest.step)
    elif latest.status is Status.ERROR:
        count, steps = 1, (latest.step,)
    else:
        return None
    others = max(down.sessions - 1, 0)
    where = f" ({down.endpoint})" if down.endpoint and down.endpoint not in down.tool else ""
    return Finding(
        TOOL_DOWN,
        count,
        steps,
        (latest.tool,),
        f"{latest.tool} is down: {others} other sessions saw it fail in the last {down.minutes} minutes",
        details=(("sessions", str(others)), ("minutes", str(down.minutes)), ("error", down.error), ("server", where)),
    )


def recalled_loop(trace: Trace, settings: DetectorSettings) -> Finding | None:
    facts, latest = trace.fleet, trace.latest
    if facts is None or not facts.stopped or latest is None or latest.proposed or latest.vetoed:
        return None
    calls = {e.call_id for e in trace.events}
    for loop in reversed(facts.stopped):  # the newest stop first
        if loop.tool != latest.tool or loop.call_id in calls or not _same(latest, loop):
            continue
        earlier = tuple(e.step for e in trace.events[:-1] if e.tool == loop.tool and not e.vetoed and _same(e, loop))
        if not earlier:
            continue
        minutes = max(1, round((facts.now - loop.at) / 60))
        return Finding(
            RECALLED,
            len(earlier),
            (*earlier, latest.step),
            (latest.tool,),
            f"an earlier run of this agent was stopped {minutes} minutes ago for this loop ({loop.detector})",
            details=(("minutes", str(minutes)), ("stopped", loop.detector)),
        )
    return None


def _failed_at(event: ToolEvent, tool: str, endpoint: str) -> bool:
    return (
        event.tool == tool
        and not event.proposed
        and not event.vetoed
        and event.status is Status.ERROR
        and event.remote == endpoint
    )


def _same(event: ToolEvent, loop: StoppedLoop) -> bool:
    """The stopped pattern's call again: the same arguments, or the same failure."""
    return event.args_hash == loop.args_hash or bool(loop.failure_hash and event.failure_hash == loop.failure_hash)
