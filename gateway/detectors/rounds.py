"""tool_rounds: too many model-tool round trips in one run (a round cap).

Count = ``trace.rounds``. Off by default: healthy coding agents legitimately make 100+ tool
calls for one prompt, and a round cap cannot tell them from a loop (the content-based detectors
can). A cap of 15 rounds is ``terminate_at: 16`` (15 allowed, the 16th stopped) in a
strict pack. Reported only once the count reaches the lowest configured threshold, so it does not
fill the findings of every request.
"""

from __future__ import annotations

from gateway.detectors.base import DetectorSettings, Finding
from gateway.trace.model import Trace

NAME = "tool_rounds"


class ToolRoundsSettings(DetectorSettings):
    warn_at: int | None = None  # off: see the module docstring; strict pack: terminate_at 16
    reject_at: int | None = None
    terminate_at: int | None = None


def detect(trace: Trace, settings: ToolRoundsSettings) -> Finding | None:
    latest = trace.latest
    thresholds = [t for t in (settings.warn_at, settings.reject_at, settings.terminate_at) if t is not None]
    if latest is None or not thresholds or latest.tool in settings.exempt_tools:
        return None
    count = trace.rounds
    if count < min(thresholds):
        return None
    # A round's calls are the last events; 64 bounds the scan whatever a round's size.
    this_round = tuple(e for e in trace.events[-64:] if e.round == latest.round)
    tools = tuple(dict.fromkeys(e.tool for e in this_round))
    return Finding(NAME, count, tuple(e.step for e in this_round), tools, f"{count} model-tool round trips in this run")
