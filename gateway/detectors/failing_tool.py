"""The same error whatever the arguments: one tool failing the same way for item after item.

An MCP tool answers "no downloads left" (a quota, an expired token, a service that is down) and
the agent calls it again for another item, and another: every call has new arguments and often a
new target, so neither a repeat count nor a per-target count sees a loop. What stays is the tool
and its refusal without the arguments it echoes (``ToolEvent.failure_hash``): the tool itself is
the failing target. ``target_failure`` reports it (its thresholds, its ladder).

Members, walking back from the latest call over the window: calls of the same tool that failed
with the latest failure's shape (a proposed or vetoed latest call takes the shape of the tool's
nearest earlier failure: the model insisting), and vetoed calls of the tool. Between them:

- another failure of the tool (another shape: the error names what differs, as each test run
  selected fails its own way) is neither a member nor the end;
- the tool succeeding ends the count: it works, for something;
- other calls are judged as ``target_failure`` judges them: neutral calls, failures and calls
  that brought nothing new are stepped over, new reads weaken the count to a warning; anything
  else that brought something new (a plan upgraded, a setting changed) is stepped over too when
  the failure after it is the very same one (its places aside: ``ToolEvent.failure_key``): it
  made no difference; when the failure changed, it ends the count;
- a call whose arguments differ from the latest only in numbers standing on their own (a batch
  over ids, a sweep over settings) and whose failure names its item (``maze 7 has no path``) is
  another item of a batch, not a member; one whose failure names no item (``backend
  unavailable`` for every id) is the tool failing whatever it is asked, a member.

The count is the number of *different things tried* among the members (their target, or their
arguments when they name none), not the number of calls: a refused edit retried on one file is
one thing (``target_failure`` counts its attempts), so a proposal on another file after it is
the second thing, not the ninth attempt. At least two real failures and two different things.

Shell calls are left out: a shell runs many programs, and its generic failure ("exit code 1")
across different commands says nothing about one of them (a sweep of `grep -q` over files);
their failures are judged per file and per command head (``target_failure``'s own count).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.detectors.common import Chain, ProgressIndex, comparable, ends_walk, failed, rounds
from gateway.detectors.values import names_its_value, numbers_only
from gateway.trace.model import ToolEvent
from gateway.trace.target import COMMAND_MARK


def members(events: tuple[ToolEvent, ...], latest: ToolEvent) -> Chain | None:
    """The latest call and the earlier calls of its tool failing the same way; None when the
    latest call continues no such pattern (see the module's rule)."""
    if _shell(latest):
        return None
    ref = latest if failed(latest) else _nearest(events, latest)
    if ref is None or not failed(ref) or ref.failure_hash is None:
        return None
    shape = ref.failure_hash
    if sum(1 for e in events if e.tool == latest.tool and e.failure_hash == shape and failed(e)) < 2:
        return None  # most calls' failures have no twin in the window: one look, no walk
    found = Chain([latest])
    progress = ProgressIndex(events)
    key = ref.failure_key
    crossed = False  # something that brought something new lies between the member found last and the next
    for event in reversed(events[:-1]):
        if event.tool == latest.tool:
            if failed(event) or event.vetoed:
                if (event.vetoed or event.failure_hash == shape) and not _another_item(event, latest):
                    if crossed and not event.vetoed and event.failure_key != key:
                        break  # the failure changed across what came between: it made a difference
                    crossed = False
                    found.append(event)
                continue
            if comparable(event) is not None:
                break  # the tool worked, for something
        elif ends_walk(event, found, progress):
            crossed = True
    if sum(1 for m in found if failed(m) and m.failure_hash == shape) < 2:
        return None
    return found


def _another_item(event: ToolEvent, latest: ToolEvent) -> bool:
    """``event`` is another item of a batch: its arguments differ from the latest's only in
    numbers standing on their own, and its failure names that item (a failure that names none
    of it, "backend unavailable" for every id, is the tool failing whatever it is asked)."""
    return numbers_only(event.args, latest.args) and (
        names_its_value(event.args, latest.args, event.result)
        or names_its_value(latest.args, event.args, latest.result)
    )


def things(events: Sequence[ToolEvent]) -> int:
    """How many different things the calls tried (their targets, or their arguments when they
    name none), in how many rounds: a batch of calls issued together is one attempt, whatever
    it tried."""
    return min(len({e.target or e.args_hash for e in events}), rounds(events))


def _nearest(events: tuple[ToolEvent, ...], latest: ToolEvent) -> ToolEvent | None:
    """The tool's latest executed call before ``latest`` (what a proposal would continue)."""
    return next((e for e in reversed(events[:-1]) if e.tool == latest.tool and comparable(e) is not None), None)


def _shell(event: ToolEvent) -> bool:
    return event.action == "shell" or event.target.startswith(COMMAND_MARK)
