"""What the fleet knows that one conversation cannot carry: remote tools failing for the whole
tenant, and loops an earlier run of the same agent was stopped for (gateway/fleet).

Set on a :class:`gateway.trace.model.Trace` by the request path (``Trace.fleet``) from the
shared state, like the warned calls and the judge's verdict, and read by the fleet's two checks
(gateway/fleet/checks.py): pure functions of the trace, so a decision is the same whichever
replica makes it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DownTool:
    """A remote tool failing with one error shape in ``sessions`` sessions of the tenant within
    the last ``minutes``: down until a success anywhere in the tenant, or that long of silence."""

    tool: str
    endpoint: str  # the MCP server or host the calls named; "" when they named none
    sessions: int  # distinct sessions that saw it fail within the window (this one included)
    error: str  # one failure's text, volatile parts scrubbed, bounded
    minutes: int  # the window
    since: float  # when it went down (epoch seconds)


@dataclass(frozen=True, slots=True)
class StoppedLoop:
    """A pattern an earlier run of the same agent was stopped for (rejected or ended)."""

    detector: str  # the detector that stopped it
    tool: str
    args_hash: str  # the stopped pattern's call (``ToolEvent.args_hash``)
    failure_hash: str  # its failure's shape, "" when it did not fail
    call_id: str  # that call's id: a run holding it is the stopped run itself, not a new one
    at: float  # when it was stopped (epoch seconds)


@dataclass(frozen=True, slots=True)
class FleetFacts:
    """``agent``: who the run belongs to across its sessions (the client's namespace, its agent
    header and how its conversation opens); what a stopped loop is remembered under."""

    agent: str
    down: tuple[DownTool, ...] = ()
    stopped: tuple[StoppedLoop, ...] = ()
    now: float = 0.0  # when the request was judged (epoch seconds): how long ago a loop was stopped

    def down_tool(self, tool: str, endpoint: str) -> DownTool | None:
        return next((d for d in self.down if d.tool == tool and d.endpoint == endpoint), None)
