"""ignored_warning: a pattern the model was warned about, continued after the warning.

Real loops vary: a failing edit retried with another replacement text each time looks new to
every repeat count, so a warning at the third attempt is followed by silence. Once a warning
reached the model (``Trace.warned``: the call whose pattern it named, remembered by the request
path in the session's state), every later call that continues that pattern counts, whatever
came between and however its arguments vary:

- the same pattern: the same tool acting on the same target (file, URL, query, element, with
  the action word beside it: ``str_replace`` and ``view`` of one file differ), or, for calls
  that name no target, arguments at least ``min_similarity`` alike (to the warned call or to the
  previous continuation, so drifting flags stay one pattern), or a failure of the tool the way
  the pattern already failed, whatever the arguments (the same error for item after item);
  or, when the warned call acts on a file, any tool or program acting on that file
  (``ToolEvent.file``: the missing file read with the read tool, then ``cat``, then a one-liner),
  a call without a result yet only when it does what the warned call did (a whole-file write
  proposed after warned edits is another way, not the pattern);
- continued: it failed the way the pattern already failed (the same refusal, whatever attempt
  it echoes: ``ToolEvent.failure_hash``), returned what the pattern already returned
  (``min_result_chars`` or more), was vetoed, or is the proposal being judged. A failure of
  another kind neither continues the pattern nor ends it: something in between made a
  difference (an edit / test cycle whose test output changes is progress).

A call of the pattern that succeeds with something new is the recovery the warning asked for:
the warning is spent, nothing escalates from it (a later loop has to earn its own warning).

A continuation of a warned check (a test run, a command, a remote call: not an operation on a
file) that comes after something of the agent's own that brought something new (an edit, a fix,
a package installed) is not counted here: the agent tried a fix, and whether the same failure
after each different fix is a loop is for ``target_failure``'s own, slower ladder to say. An
operation on a file (a read, an edit, a write) fails for reasons of its own, which other work
does not fix: it climbs this ladder however it is retried, and so does a check retried with
nothing done between.
The count is the continuations after the warning, the latest call among them; the ladder goes
on per continued step (warn again, refuse, end the run), as WeClaw's progressive response does.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from pydantic import Field
from rapidfuzz.distance import Indel

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import (
    ProgressIndex,
    comparable,
    failed,
    rounds,
    running_job,
    same_operation,
    skipped,
    steps_of,
    window,
)
from gateway.trace.model import ToolEvent, Trace
from gateway.trace.paths import same_file
from gateway.trace.settings import DEFAULT_TARGET_KEYS
from gateway.trace.target import call_target

NAME = "ignored_warning"


class IgnoredWarningSettings(DetectorSettings):
    # Counted from a warning at the 3rd call, 1/2/5 are the 4th/5th/8th: the steps of
    # no_progress's 3/5/8, so an exact repeat ends where it did, and a varied one ends too.
    warn_at: int | None = 1  # the first continued step: the warning again
    reject_at: int | None = 2  # the second: refused (a failure after the warning, then again)
    terminate_at: int | None = 5  # refused three times and still at it: the run ends
    window: int = Field(default=64, ge=2)  # the trace's horizon: a warning holds for the run
    min_similarity: float = Field(default=0.8, ge=0.0, le=1.0)  # calls that name no target
    min_result_chars: int = Field(default=16, ge=0)  # "OK" again is not "the same answer"
    # Warnings of these detectors do not escalate: a round cap, a turn rule, the retrieval guard
    # and the model judge's verdict name no repeated call, only a point in the run.
    not_after: frozenset[str] = frozenset({"tool_rounds", "required_tool", "retrieval", "llm_judge"})
    skip_polling: bool = True  # a poll's own ladder judges it


def detect(trace: Trace, settings: IgnoredWarningSettings) -> Finding | None:
    if not trace.warned:
        return None
    events = window(trace, settings.window)
    latest = events[-1] if events else None
    if latest is None or latest.neutral or skipped(latest, settings.exempt_tools, settings.skip_polling):
        return None
    ids = {w.call_id for w in trace.warned if w.detector not in settings.not_after}
    best: list[ToolEvent] = []
    progress = ProgressIndex(events)
    for at, anchor in enumerate(events[:-1]):
        if anchor.call_id in ids and (anchor.tool == latest.tool or _on_file(latest, anchor)):
            members = _continued(anchor, events[at + 1 :], settings, progress)
            if members and members[-1] is latest and rounds(members) > rounds(best):
                best = members
    if not best:
        return None
    count = rounds(best)
    # A running job polled again after the warning: a matter of pacing, never a refusal.
    running = running_job(events, latest)
    return Finding(
        NAME,
        count,
        steps_of(best),
        (latest.tool,),
        f"`{latest.tool}` went on with the pattern it was warned about: {count} more "
        f"time{'s' if count > 1 else ''} since the warning",
        warn_only=running,
    )


def _continued(
    anchor: ToolEvent, after: Sequence[ToolEvent], settings: IgnoredWarningSettings, progress: ProgressIndex
) -> list[ToolEvent]:
    """The calls after ``anchor`` that continue its pattern; empty once one of them recovered."""
    members: list[ToolEvent] = []
    results = {anchor.result_hash}
    failures = {anchor.failure_hash} - {None}
    target = _target(anchor)
    last = anchor
    checks = not _on_a_file(anchor)  # a check's failure may be fixed by the agent's other work
    tried = False  # something of the agent's own brought something new since the last member
    for event in after:
        if event.neutral:
            continue
        own = event.tool == anchor.tool and (
            _same_pattern(event, last, anchor, target, settings) or _same_error(event, target, failures)
        )
        if not own and not (
            _on_file(event, anchor) and (same_operation(event, anchor) or comparable(event) is None or failed(event))
        ):
            # Not the pattern (a look at the file or a write of it is neither the pattern nor
            # its end); a fix, a write, an install that brought something new is an attempt.
            tried = tried or (checks and _tried(event, progress))
            continue
        if failed(event):
            if event.failure_hash not in failures and event.result_hash not in results:
                # Another failure than before: what changed in between made a difference (a test
                # run that fails otherwise after an edit); not the pattern going on, not its end.
                failures.add(event.failure_hash)
                results.add(event.result_hash)
                continue
        elif not (event.vetoed or event.proposed):
            if event.result_hash is None:
                continue  # no result (missing): says nothing either way
            if event.result_hash not in results:
                return []  # it worked, with something new: the warning was heeded
            if len(event.result or "") < settings.min_result_chars:
                continue  # the same short "OK": says nothing either way
        if tried:
            tried = False  # the same failure after a fix: target_failure's to count
            continue
        members.append(event)
        results.add(event.result_hash)
        last = event
    return members


def _on_a_file(event: ToolEvent) -> bool:
    """An operation on a file (read, edit, write, list, search), not a command or a remote call
    that happens to name one (a test run's test file)."""
    return bool(event.file) and event.action not in _CHECKS


_CHECKS = frozenset({"shell", "fetch", "delegate", "poll", "wait"})


def _tried(event: ToolEvent, progress: ProgressIndex) -> bool:
    """The agent did something that brought something new: not a look, a thought or a failure."""
    return not (event.observation or event.neutral_guess or failed(event)) and progress.is_new(event)


def _same_pattern(
    event: ToolEvent, last: ToolEvent, anchor: ToolEvent, target: str | None, settings: IgnoredWarningSettings
) -> bool:
    if event.args_hash in (anchor.args_hash, last.args_hash):
        return True
    if target is not None:
        return _target(event) == target
    if _target(event) is not None:
        return False
    return any(Indel.normalized_similarity(event.args, ref.args) >= settings.min_similarity for ref in (anchor, last))


def _on_file(event: ToolEvent, anchor: ToolEvent) -> bool:
    return bool(anchor.file) and same_file(event.file, anchor.file)


def _same_error(event: ToolEvent, target: str | None, failures: set[str | None]) -> bool:
    """For calls that name no target: the tool failing the way the pattern failed, whatever
    the arguments ("no downloads left" for another item) is the pattern going on."""
    return target is None and failed(event) and event.failure_hash in failures


def _target(event: ToolEvent) -> str | None:
    """What a call names by key (a file, a URL, a query, an element, with the action word
    beside it); None if it names nothing. Not ``ToolEvent.target``: for a shell command that is
    the file it acts on or, naming none, its head (`npm install`), too coarse to call two failing
    commands one attempt; those are compared by their arguments' similarity instead."""
    try:
        value = orjson.loads(event.args)
    except orjson.JSONDecodeError:
        return None
    return call_target(value, DEFAULT_TARGET_KEYS, ()) or None
