"""exact_repeat: the same tool with the same canonical arguments, again and again.

The doom-loop guard: (tool, args hash) 3 times within the last 6 calls; WeClaw: the last 3 calls
identical; OpenClaw genericRepeat. Count = the latest call and its identical predecessors in the
window (all of them, or only the unbroken run when ``consecutive``).

Arguments alone cannot tell a doom loop from polling, a `date`-like command or a debugger's
`next` (gemini-cli's most common complaint), so by default a repeat that returned something new
restarts the count (``reset_on_progress``) and the detector only warns: the stronger actions are
left to result-inclusive detectors (no_progress, error_repeat). The doom-loop guard's and
WeClaw's pure argument matching is ``reset_on_progress: false``.
"""

from __future__ import annotations

from pydantic import Field

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import (
    chain,
    comparable,
    no_outcome,
    same_call,
    skipped,
    steps_of,
    window,
)
from gateway.trace.model import Trace

NAME = "exact_repeat"


class ExactRepeatSettings(DetectorSettings):
    warn_at: int | None = 3  # the 3rd identical call is a doom loop
    reject_at: int | None = None  # args-only signal: never blocks by default
    terminate_at: int | None = None
    # Polling a background task may repeat freely.
    exempt_tools: frozenset[str] = frozenset({"check_background_tasks"})
    window: int = Field(default=6, ge=2)  # the doom-loop window: the last 6 calls
    consecutive: bool = False  # anywhere in the window; true: only an unbroken run
    # A repeat whose result differs from the next one's, or a call with a new result in between,
    # is progress (polling with changing output, `date`, debugger stepping): the count restarts.
    reset_on_progress: bool = True
    skip_polling: bool = True  # polling calls repeat by design; no_progress judges them


def detect(trace: Trace, settings: ExactRepeatSettings) -> Finding | None:
    if not trace.repeats(settings.window):
        return None
    events = window(trace, settings.window)
    if skipped(events[-1], settings.exempt_tools, settings.skip_polling):
        return None
    members = chain(
        events,
        same_call,
        comparable if settings.reset_on_progress else no_outcome,
        consecutive=settings.consecutive,
        stop_on_progress=settings.reset_on_progress,
    )
    count, warn_only, counted = members.tally(settings)
    if count < 2:
        return None
    tool = events[-1].tool
    where = "in a row" if settings.consecutive else f"within the last {len(events)} calls"
    return Finding(
        NAME,
        count,
        steps_of(counted),
        (tool,),
        f"`{tool}` called {count} times with identical arguments {where}",
        warn_only=warn_only,
    )
