"""unknown_tool: calls to tools that do not exist, one after another.

OpenClaw's unknownToolThreshold. An event is unknown when its result says so
(TraceSettings.unknown_tool_patterns), or when the request declares its tools and this one is not
among them and did not succeed (a proposed or vetoed call to an undeclared tool included).
Count = the trailing run of unknown calls (any names), or all of them in the window when not
``consecutive``. One unknown call is reported (count 1) so a strict pack can warn on it.
"""

from __future__ import annotations

from pydantic import Field

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import rounds, skipped, steps_of, window
from gateway.trace.model import Status, ToolEvent, Trace

NAME = "unknown_tool"


class UnknownToolSettings(DetectorSettings):
    warn_at: int | None = 2  # one hallucinated name is corrected by the agent's error; two is a habit
    reject_at: int | None = 3  # vetoing a call that cannot run costs the agent nothing
    terminate_at: int | None = 6  # OpenClaw: 10; a model that keeps inventing tools is lost sooner
    window: int = Field(default=10, ge=1)  # OpenClaw unknownToolThreshold
    consecutive: bool = True  # "in a row"


def is_unknown(event: ToolEvent) -> bool:
    if event.status is Status.UNKNOWN_TOOL:
        return True
    return event.declared is False and event.status is not Status.OK


def detect(trace: Trace, settings: UnknownToolSettings) -> Finding | None:
    events = window(trace, settings.window)
    if not events or not is_unknown(events[-1]) or skipped(events[-1], settings.exempt_tools, False):
        return None
    members = []
    for event in reversed(events):
        if is_unknown(event):
            members.append(event)
        elif settings.consecutive:
            break
    names = tuple(dict.fromkeys(e.tool for e in reversed(members)))
    count = rounds(members)
    return Finding(
        NAME,
        count,
        steps_of(members),
        names,
        f"{count} call{'s' if count > 1 else ''} to unknown tools ({', '.join(names)})",
    )
