"""no_progress: the same call returning the same (normalized) result, again and again.

OpenHands' identical action+observation pairs, OpenClaw's global circuit breaker and its
knownPollNoProgress (paced polls get their own, higher ``poll_*`` ladder). Count = the latest
call and its identical predecessors in the window whose results all match, stepping over other
calls unless one of them brought something new (then the agent is getting somewhere). A proposed
call counts as one more repeat; a vetoed one counts as the model insisting, and its result (our
observation) is never compared.

Which ladder: a poll (``ToolEvent.polling``, a ``poll`` action, or one of ``polling_tools``) that
waited before it asked (``ToolEvent.paced``: `sleep 30 && tail log`, or a sleep/wait call just
before it) is waiting by design and uses the ``poll_*`` ladder. A poll that did not wait is a busy
loop (Claude Code's `BashOutput` asked again and again, each answer "running" with a new
timestamp): the same answer again is no progress like any other call's, on the normal ladder.
Only the latest call's own mark is read. A poll whose (normalized) output changes is never
counted, paced or not.

A poll whose answer changed earlier in the window, by itself (``common.running_job``), is a
running job: the same answer again between two changes is at most a warning to pace the polls,
never a refusal. A poll that has answered the same as far as the window sees keeps the ladder:
a busy-wait on a job that never moves is still ended.
"""

from __future__ import annotations

from pydantic import Field

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import chain, comparable, running_job, same_call, skipped, steps_of, window
from gateway.trace.model import Trace

NAME = "no_progress"


class NoProgressSettings(DetectorSettings):
    # Same call, same result: the strongest evidence there is, so this detector escalates.
    warn_at: int | None = 3  # WeClaw/Cline: warn on the 3rd identical call
    reject_at: int | None = 5  # Roo Code blocks the 4th, OpenHands stops at 4 pairs; one more grace
    terminate_at: int | None = 8  # the model ignored the warning and 3 vetoes: end the run
    window: int = Field(default=30, ge=2)  # OpenClaw historySize
    consecutive: bool = False  # loops often interleave a read or a sleep
    # Known polling tools, on top of TraceSettings.polling_tools/polling_args_patterns
    # (check_background_tasks polls a background task; OpenClaw still caps endless polls, so: own
    # ladder).
    polling_tools: frozenset[str] = frozenset({"check_background_tasks"})
    poll_warn_at: int | None = 10  # OpenClaw knownPollNoProgress warning
    poll_reject_at: int | None = 20  # OpenClaw critical
    poll_terminate_at: int | None = 30  # OpenClaw global circuit breaker (1,535-poll incident)


def detect(trace: Trace, settings: NoProgressSettings) -> Finding | None:
    if not trace.repeats(settings.window):
        return None
    events = window(trace, settings.window)
    if skipped(events[-1], settings.exempt_tools, False):
        return None
    latest = events[-1]
    members = chain(events, same_call, comparable, consecutive=settings.consecutive, stop_on_progress=True)
    polling = latest.polling or latest.action == "poll" or latest.tool in settings.polling_tools
    ladder = "poll" if polling and latest.paced else None
    count, warn_only, counted = members.tally(settings, ladder)
    if count < 2:
        return None
    running = running_job(events, latest)
    what = ("polled" if latest.paced else "polled without waiting") if polling or running else "called"
    between = ", between reads of other things" if warn_only else ""
    if running:
        between = "; its answer changes between such streaks: the job is running, wait longer between polls"
    return Finding(
        NAME,
        count,
        steps_of(counted),
        (latest.tool,),
        f"`{latest.tool}` {what} {count} times with identical arguments and the same result{between}",
        ladder=ladder,
        warn_only=warn_only or running,
    )
