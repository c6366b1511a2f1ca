"""target_failure: one target failing again and again, however it is reached, arguments varying.

A coding agent's edit of one file is refused (another replacement text each time), a fetch of one
URL fails (another header, another flag), a click on one element misses: the arguments differ on
every call, so no repeat detector sees a repeat, and reads of other things come between. The
target is what stays: a file (ToolEvent.file), whichever tool, program or path spelling reaches
it (the read tool, then `cat`, `head`, a one-liner), or, for calls naming no file, the tool and
its target (a URL, query, element, a command's head: ToolEvent.target).

Count = the latest call and its predecessors in the window on the same target, all failed (a
vetoed or proposed one counts: the model insisting), provided the latest failure's shape (its
refusal without the attempt it echoes) occurs at least twice among them, walking back over:

- reads (read-only looking calls), neutral calls and calls that failed or brought nothing new
  (another refusal): stepped over. Reads mark the count as gathered across reads, which may
  warn, and block only when the members before the first read reach the blocking threshold;
- the same operation on the target succeeding (the same tool, or the same action on the file):
  the count stops (it worked; a later failure is new);
- any other call that brought something new (an edit before re-running the tests, a package
  installed before re-running the script): the count stops if the failure after it differs
  from the failure before it (the agent is getting somewhere); when the failure is the same
  after it, it made no difference, and the count goes on (the same type error after each
  rewrite of another file is one failure attempted again);
- a shell command with the same head whose arguments differ from the latest only in numbers
  standing on their own (a batch over ids, a sweep over settings): another item, not another
  attempt, so it is stepped over. (An edit of one file with other line numbers is another
  attempt.)

The tool itself is a failing target too: the same tool failing with the same error (its shape)
for different things tried, target or none ("no downloads left" for item after item), counts the
different things tried (``failing_tool``; ``across_arguments``). The larger count is reported.
"""

from __future__ import annotations

from pydantic import Field

from gateway.detectors import failing_tool
from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import (
    Chain,
    ProgressIndex,
    comparable,
    ends_walk,
    failed,
    same_operation,
    skipped,
    steps_of,
    window,
)
from gateway.detectors.values import numbers_only
from gateway.trace.model import ToolEvent, Trace
from gateway.trace.paths import same_file
from gateway.trace.target import COMMAND_MARK

NAME = "target_failure"
_SHOWN_CHARS = 80


class TargetFailureSettings(DetectorSettings):
    warn_at: int | None = 3  # the third failed attempt on one target
    reject_at: int | None = 6  # failures are the tool's own evidence, but attempts vary: more grace
    terminate_at: int | None = 9
    window: int = Field(default=20, ge=2)
    skip_polling: bool = True  # waiting for a URL to come up fails until it does
    # Also count one tool failing with the same error for different arguments (failing_tool):
    # "no downloads left" for item after item is the tool failing, whatever it is asked.
    across_arguments: bool = True


def detect(trace: Trace, settings: TargetFailureSettings) -> Finding | None:
    events = window(trace, settings.window)
    if not events:
        return None
    latest = events[-1]
    if latest.neutral or skipped(latest, settings.exempt_tools, settings.skip_polling):
        return None
    if comparable(latest) is not None and not failed(latest):
        return None
    one = _on_target(events, latest, settings) if latest.target or latest.file else None
    every = _whatever_arguments(events, latest, settings) if settings.across_arguments else None
    if every is not None and (one is None or every.count > one.count):
        return every
    return one


def _on_target(events: tuple[ToolEvent, ...], latest: ToolEvent, settings: TargetFailureSettings) -> Finding | None:
    if sum(1 for e in events if failed(e) and _same_target(e, latest)) < 2:
        return None  # a pattern needs two failures on the target; most calls' targets have none
    members = _members(events, latest)
    failures = [m.failure_hash for m in members if failed(m)]
    if len(failures) < 2 or failures.count(failures[0]) < 2:
        # One failure and the model's insisting is not yet a pattern on the target; nor are
        # failures that are all different (each test selected fails its own way, each run names
        # another missing module): the agent is finding things out.
        return None
    count, warn_only, counted = members.tally(settings)
    if count < 2:
        return None
    varied = len({m.args_hash for m in members}) > 1
    shown = _shown(latest.file or latest.target)
    how = " with varying arguments" if varied else ""
    return Finding(
        NAME,
        count,
        steps_of(counted),
        (latest.tool,),
        f"{_by(members)} failed {count} times on `{shown}`{how}",
        warn_only=warn_only,
    )


def _whatever_arguments(
    events: tuple[ToolEvent, ...], latest: ToolEvent, settings: TargetFailureSettings
) -> Finding | None:
    """The tool itself as the failing target: the same error for different things tried
    (``failing_tool``)."""
    members = failing_tool.members(events, latest)
    if members is None:
        return None
    count, warn_only, counted = members.tally(settings, measure=failing_tool.things)
    if count < 2:
        return None
    return Finding(
        NAME,
        count,
        steps_of(counted),
        (latest.tool,),
        f"`{latest.tool}` failed with the same error for {count} different arguments",
        warn_only=warn_only,
    )


def _shown(target: str) -> str:
    return target if len(target) <= _SHOWN_CHARS else target[:_SHOWN_CHARS] + "..."


def _members(events: tuple[ToolEvent, ...], latest: ToolEvent) -> Chain:
    members = Chain([latest])
    progress = ProgressIndex(events)
    crossed = False  # something that brought something new lies between the member found last and the next
    for event in reversed(events[:-1]):
        if _same_target(event, latest):
            if comparable(event) is not None and not failed(event):
                if same_operation(event, latest):
                    break  # it worked in between
                crossed = crossed or progress.is_new(event)
                continue
            if crossed and not _same_failure(event, members, events):
                break  # what came between made a difference
            crossed = False
            if not (latest.target.startswith(COMMAND_MARK) and numbers_only(event.args, latest.args)):
                members.append(event)
        elif ends_walk(event, members, progress):
            crossed = True
    return members


def _same_target(event: ToolEvent, latest: ToolEvent) -> bool:
    """One file by any tool or spelling; else the same tool on the same target."""
    if latest.file and event.file and same_file(event.file, latest.file):
        return True
    return bool(latest.target) and event.tool == latest.tool and event.target == latest.target


def _same_failure(event: ToolEvent, members: Chain, events: tuple[ToolEvent, ...]) -> bool:
    """``event`` failed as the newest member that has a failure of its own did. For a latest
    call with no result yet (a proposal), whose failure is unknown: the failure before it
    predicts it once the same failure has come back after fixes at least twice (three times in
    the window), so a fix that at last changed something is not presumed to fail again."""
    key = next((m.failure_key for m in members if m.failure_key is not None), None)
    if key is None:
        key = event.failure_key
        if key is None or sum(1 for e in events if e.failure_key == key and failed(e)) < _PREDICTS:
            return False
    return event.failure_key == key


_PREDICTS = 3


def _by(members: Chain) -> str:
    tools = list(dict.fromkeys(m.tool for m in reversed(members)))
    return " / ".join(f"`{t}`" for t in tools[:3]) + (" ..." if len(tools) > 3 else "")
