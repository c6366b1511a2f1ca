"""cross_turn: the same failing call, with the same error, repeated across user turns.

A support agent tries a write, gets an error, apologises; the user says "please try again" and
the agent repeats the very same call with the very same result. With ``scope: run`` every other
detector starts afresh at each user message, so such a loop never accumulates. This one reads the
earlier turns of the conversation too (``Trace.prior``; the run's own events with ``scope:
conversation``) and counts the failures of the latest call that share its normalized error.

Count = the latest call and its identical predecessors in the last ``window`` calls of the
conversation, all failed with the same error (a vetoed or proposed repeat counts: the model
insisting), stepping over any other calls (the agent talks, looks things up, answers other
questions); a success of that call, or a different error, ends the count. Only reported when the
repeats span at least ``min_turns`` user turns: within one run the other detectors judge.

The user asked for the retry, so this needs more evidence than a loop inside one run: warn at 3,
reject at 6, terminate at 10 (error_repeat: 3/5/8).
"""

from __future__ import annotations

from pydantic import Field

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import comparable, failed, rounds, same_call, skipped, steps_of
from gateway.trace.model import ToolEvent, Trace

NAME = "cross_turn"


class CrossTurnSettings(DetectorSettings):
    warn_at: int | None = 3  # e.g. failed, "please try again", failed, "again", failed
    reject_at: int | None = 6  # more than error_repeat's 5: the user asked for the retries
    terminate_at: int | None = 10
    window: int = Field(default=30, ge=2)  # calls of the conversation, earlier turns included
    min_turns: int = Field(default=2, ge=2)  # user turns the repeats must span
    skip_polling: bool = True  # waiting for a server that is down is the poll ladder's business


def detect(trace: Trace, settings: CrossTurnSettings) -> Finding | None:
    latest = trace.latest
    if latest is None or skipped(latest, settings.exempt_tools, settings.skip_polling):
        return None
    if comparable(latest) is not None and not failed(latest):
        return None
    if not (trace.repeats(settings.window) or _repeats_before(trace, settings.window)):
        return None
    recent = _recent(trace, settings.window)
    members = _failures(recent, latest)
    turns = {e.user_turn for e in members}
    if len(members) < 2 or len(turns) < settings.min_turns or not any(map(failed, members)):
        return None
    count = rounds(members)
    if count < 2:
        return None
    current = tuple(e for e in members if e.step > 0) or (latest,)
    return Finding(
        NAME,
        count,
        steps_of(current),
        (latest.tool,),
        f"`{latest.tool}` failed {count} times with identical arguments and the same "
        f"error, across {len(turns)} user turns",
    )


def _repeats_before(trace: Trace, size: int) -> bool:
    """Whether the latest call occurs among the earlier user turns' events ``_recent`` reaches."""
    missing = size - len(trace.events)
    if missing <= 0 or not trace.prior:
        return False
    latest = trace.events[-1]
    return any(same_call(e, latest) for e in trace.prior[-missing:])


def _recent(trace: Trace, size: int) -> tuple[ToolEvent, ...]:
    events = trace.events[-size:]
    if len(events) < size and trace.prior:
        return trace.prior[len(events) - size :] + events
    return events


def _failures(events: tuple[ToolEvent, ...], latest: ToolEvent) -> list[ToolEvent]:
    """The latest call and its earlier identical failures with the same error, newest first."""
    members = [latest]
    error = comparable(latest)
    for event in reversed(events[:-1]):
        if not same_call(event, latest):
            continue
        result = comparable(event)
        if result is not None:
            if not failed(event):
                break  # it worked in between: whatever failed later is a new problem
            if error is None:
                error = result
            elif result != error:
                break  # a different error: something changed
        members.append(event)
    return members
