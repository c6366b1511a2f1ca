"""error_repeat: the same call failing again and again (the error text may differ).

OpenHands: 3 identical actions all erroring. Count = the latest call and its identical
predecessors, all failed (vetoed or proposed repeats count: the model insisting), stopping at
the first success; at least one real failure is required. Consecutive by default: a test run
that keeps failing between edits is the edit/run cycle, which is progress while the output
changes.
"""

from __future__ import annotations

from pydantic import Field

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import (
    FAILED,
    chain,
    failed_or_same_result,
    same_call,
    skipped,
    steps_of,
    window,
)
from gateway.trace.model import Trace

NAME = "error_repeat"


class ErrorRepeatSettings(DetectorSettings):
    warn_at: int | None = 3  # OpenHands' 3 failing identical actions; WeClaw's permission denied x3
    reject_at: int | None = 5  # result-inclusive, so it may block: after 4 identical failures
    terminate_at: int | None = 8  # still insisting after the warning and 3 vetoes
    window: int = Field(default=10, ge=2)
    consecutive: bool = True  # a different call in between (an edit, a fix) breaks the run
    skip_polling: bool = True  # waiting for a server to come up fails until it does


def detect(trace: Trace, settings: ErrorRepeatSettings) -> Finding | None:
    if not trace.repeats(settings.window):
        return None
    events = window(trace, settings.window)
    if skipped(events[-1], settings.exempt_tools, settings.skip_polling):
        return None
    members = chain(events, same_call, failed_or_same_result, consecutive=settings.consecutive, stop_on_progress=True)
    # All known outcomes are failures, and there is at least one (not only vetoes or proposals).
    outcomes = {failed_or_same_result(e) for e in members} - {None}
    if len(members) < 2 or outcomes != {FAILED}:
        return None
    tool = events[-1].tool
    count, warn_only, counted = members.tally(settings)
    if count < 2:
        return None
    return Finding(
        NAME,
        count,
        steps_of(counted),
        (tool,),
        f"`{tool}` failed {count} times with identical arguments",
        warn_only=warn_only,
    )
