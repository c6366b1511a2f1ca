"""Building blocks the detectors share: bounded windows, result comparison, repeat chains.

Every detector looks only at the latest ``window`` events (a tuple slice), never the whole
trace: its cost and memory are bounded by the window whatever the length of the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from operator import attrgetter
from typing import NamedTuple

from gateway.detectors.base import DetectorSettings
from gateway.trace.model import Status, ToolEvent, Trace
from gateway.trace.normalize import EMPTY_RESULT_HASH
from gateway.trace.paths import inside
from gateway.trace.roles import looks_writing

FAILED = "failed"  # the outcome of any failed call: error texts may differ, the failure repeats
_FAILURES = (Status.ERROR, Status.UNKNOWN_TOOL)


def window(trace: Trace, size: int) -> tuple[ToolEvent, ...]:
    return trace.events[-size:]


def key(event: ToolEvent) -> tuple[str, str]:
    """Same tool, same canonical arguments."""
    return event.tool, event.args_hash


def comparable(event: ToolEvent) -> str | None:
    """The result hash to compare, or None when the event has no result of the tool's own:
    proposed (not run yet), vetoed (our observation, never progress), or missing."""
    if event.proposed or event.vetoed:
        return None
    return event.result_hash


def failed(event: ToolEvent) -> bool:
    return event.status in _FAILURES and not event.vetoed


def failed_or_same_result(event: ToolEvent) -> Hashable | None:
    """Failures all agree with each other (error text may differ); successes by result hash."""
    if comparable(event) is None:
        return None
    return FAILED if failed(event) else event.result_hash


def no_outcome(_event: ToolEvent) -> None:
    return None


def skipped(event: ToolEvent, exempt: frozenset[str], skip_polling: bool) -> bool:
    return event.tool in exempt or (skip_polling and event.polling)


class ProgressIndex:
    """Whether an event brought something new: its (call, result) occurs once in the window.

    Between two repeats of a call, a call with a new result is progress (polling whose output
    changes, an edit before re-running tests); a call that keeps returning the same thing is not.
    Built lazily: consecutive chains never need it.

    A failure whose shape (its refusal without the attempt it echoes, ToolEvent.failure_hash)
    occurred before in the window brought nothing new either, whatever its arguments: a
    refused edit quotes each new attempt, so its text is always new.
    """

    __slots__ = ("_counts", "_events", "_shapes")

    def __init__(self, events: Sequence[ToolEvent]) -> None:
        self._events = events
        self._counts: Counter[tuple[str, str, str | None, bool, bool]] | None = None
        self._shapes: Counter[tuple[str, str | None]] | None = None

    def is_new(self, event: ToolEvent) -> bool:
        result = comparable(event)
        if result is None:
            return False
        if event.failure_hash is not None:
            if self._shapes is None:
                self._shapes = Counter(map(_SHAPE, self._events))
            if self._shapes[(event.tool, event.failure_hash)] > 1:
                return False
        if self._counts is None:  # counted at C speed; keys of events without a result go unused
            self._counts = Counter(map(_OUTCOME, self._events))
        return self._counts[(event.tool, event.args_hash, result, False, False)] == 1


# (call, result) of an event that has a comparable result (not proposed, not vetoed; see comparable)
_OUTCOME = attrgetter("tool", "args_hash", "result_hash", "proposed", "vetoed")
_SHAPE = attrgetter("tool", "failure_hash")


class Chain(list[ToolEvent]):
    """The members of a pattern, newest first. ``strict``: how many of them were found before
    the count stepped over a call whose meaning is a guess (a new read-only-looking call, a call
    neutral by shape only): the evidence beyond it is weaker."""

    strict: int | None = None  # None: never stepped over one

    def step_over(self) -> None:
        """A call whose meaning is a guess sits between members found so far and older ones."""
        if self.strict is None:
            self.strict = len(self)

    @property
    def interleaved(self) -> bool:
        return self.strict is not None and self.strict < len(self)

    def tally(
        self,
        settings: DetectorSettings,
        ladder: str | None = None,
        measure: Callable[[Sequence[ToolEvent]], int] | None = None,
    ) -> Tally:
        """The finding's count: the members up to the first interleaved read when they alone
        reach a blocking threshold of the ladder; else all of them, warning only. ``measure``:
        what a run of members counts for (default: the rounds they were issued in)."""
        measure = measure or rounds
        if not self.interleaved:
            return Tally(measure(self), False, tuple(self))
        strict = self[: self.strict]
        prefix = ladder + "_" if ladder else ""
        blocking = [t for k in ("reject_at", "terminate_at") if (t := getattr(settings, prefix + k, None)) is not None]
        if blocking and measure(strict) >= min(blocking):
            return Tally(measure(strict), False, tuple(strict))
        return Tally(measure(self), True, tuple(self))


class Tally(NamedTuple):
    total: int  # the finding's count
    warn_only: bool
    members: tuple[ToolEvent, ...]  # those counted, newest first


def rounds(events: Iterable[ToolEvent]) -> int:
    """How many attempts ``events`` are: the calls of one assistant message were all chosen
    before any of their results existed, so the calls of a round count once (a batch of edits
    that fail together is one attempt at each, not a streak of failures)."""
    return len({(e.user_turn, e.round) for e in events})


def chain(
    events: Sequence[ToolEvent],
    is_member: Callable[[ToolEvent, ToolEvent], bool],
    outcome: Callable[[ToolEvent], Hashable | None],
    *,
    consecutive: bool,
    stop_on_progress: bool,
) -> Chain:
    """The latest event and the earlier members of its pattern, newest first.

    Walking back from the latest event: ``is_member(event, newest_member)`` says whether an event
    continues the pattern; a member whose ``outcome`` differs from the chain's (the nearest known
    one) ends it, because the repeat produced something different; None outcomes (proposed,
    vetoed, missing) agree with anything. Non-members:

    - neutral calls (think/plan/log/todo by name) are always stepped over, even when
      ``consecutive``: new text in them is not progress;
    - calls neutral by shape only (free text in, "Done." out) are stepped over too, even when
      ``consecutive``, but mark the chain ``interleaved``: a delegated fix looks the same;
    - any other call ends the chain when ``consecutive``;
    - otherwise, with ``stop_on_progress``, a call that brought something new (its call+result
      occurs once in the window) ends it, unless it looks read-only (read/get/list/search...)
      and the pattern is a failing call retried: then it is stepped over and the chain is marked
      ``interleaved`` (warn only), because an edit or a fix between two runs of a test is
      progress, a read of something else is not clearly so. A poll (`sleep 20`, then `tail log`
      with new lines) is waiting that pays off, and re-reading a file between reads of others is
      exploring: both end at the new call as before;
    - calls that brought nothing new are stepped over, and so is a read-only call that answered
      exactly what the pattern answers (the same file read by another path): it learnt nothing;
    - a write or an edit of what the latest call looks at (the file it reads, a file in the
      directory it lists) is stepped over too: the look answered the same after it as before,
      so it made no difference there (a file created again and again that never shows up).
    """
    latest = events[-1]
    members = Chain([latest])
    ref = outcome(latest)
    progress = ProgressIndex(events) if stop_on_progress and not consecutive else None
    for event in reversed(events[:-1]):
        if is_member(event, members[-1]):
            found = outcome(event)
            if found is not None:
                if ref is None:
                    ref = found
                elif found != ref:
                    break
            members.append(event)
        elif event.neutral:
            continue
        elif event.neutral_guess:
            members.step_over()
        elif consecutive:
            break
        elif event.observation and ref is not None and outcome(event) == ref:
            continue  # the same answer spelled another way (`cat ./a`, `cat /w/a`): nothing new
        elif progress is not None and progress.is_new(event):
            if _changes_what_it_watches(event, latest):
                continue
            if not (event.observation and _retrying(latest, members)):
                break
            members.step_over()
    return members


def _changes_what_it_watches(event: ToolEvent, latest: ToolEvent) -> bool:
    if not (latest.observation and event.file and latest.file):
        return False
    return _writes(event) and inside(event.file, latest.file)


def changed_a_file(event: ToolEvent) -> bool:
    """An edit or a write that succeeded: whatever its tool answered, a file changed."""
    return bool(event.file) and _writes(event) and comparable(event) is not None and not failed(event)


def _writes(event: ToolEvent) -> bool:
    return event.action in _CHANGING if event.action else looks_writing(event.tool)


_CHANGING = frozenset({"edit", "write"})


def ends_walk(event: ToolEvent, found: Chain, progress: ProgressIndex) -> bool:
    """Whether a call outside a failure pattern ends the walk back over it (target_failure and
    its same-error count): neutral calls, vetoes and other failures say nothing new; a new read
    or a call neutral by shape only is stepped over but weakens the count to a warning; any
    other call that brought something new ends it (an edit before re-running: progress)."""
    if event.neutral or event.vetoed or failed(event):
        return False
    if event.observation or event.neutral_guess:
        if progress.is_new(event):
            found.step_over()
        return False
    return progress.is_new(event)


def _retrying(latest: ToolEvent, members: Sequence[ToolEvent]) -> bool:
    """The pattern is a failing call retried (not a poll, which is answered by what it waits
    for; not a successful read repeated, which an agent exploring does between other reads)."""
    return not latest.polling and any(failed(m) for m in members)


def same_call(event: ToolEvent, member: ToolEvent) -> bool:
    return event.tool == member.tool and event.args_hash == member.args_hash


def same_operation(event: ToolEvent, other: ToolEvent) -> bool:
    """The two calls do the same kind of thing: the same action (a read by the read tool and by
    `cat`), or, where either action is unknown, the same tool."""
    if event.action and other.action:
        return event.action == other.action
    return event.tool == other.tool


def running_job(events: Sequence[ToolEvent], latest: ToolEvent) -> bool:
    """The latest call polls something that moves by itself: among ``events``, the same call
    answered one thing and, later, another, with only looking, waiting and thinking between
    (nothing of the agent's own that could have made the difference), both answers successes
    with something in them. A job whose answers change is running: the same answer again
    between two changes is a matter of pacing, not a loop. Only ``events`` count: a streak
    longer than the caller's window has answered the same as far as it can see."""
    before: str | None = None
    for event in events:
        if same_call(event, latest):
            now = comparable(event)
            if now is None:
                continue
            if failed(event) or now == EMPTY_RESULT_HASH:
                before = None
                continue
            if before is not None and now != before:
                return True
            before = now
        elif not _quiet(event):
            before = None
    return False


def _quiet(event: ToolEvent) -> bool:
    """A call that changes nothing the agent polls: thinking, waiting, looking, polling."""
    return event.neutral or event.neutral_guess or event.observation or event.polling or event.action in _WAITING


_WAITING = frozenset({"wait", "poll"})


# Blanks has_chars walks at either edge before it lets str.strip measure the text.
_EDGE = 64


def has_chars(text: str, count: int) -> bool:
    """``len(text.strip()) >= count``, without copying ``text``: a tool result may be long, and
    only its edges decide."""
    if len(text) < count:
        return False
    start, end = 0, len(text)
    while start < end and text[start].isspace():
        start += 1
        if start > _EDGE:  # a long blank stretch: let the C code measure it
            return len(text.strip()) >= count
    while end > start and text[end - 1].isspace():
        end -= 1
        if len(text) - end > _EDGE:
            return len(text.strip()) >= count
    return end - start >= count


def steps_of(events: Sequence[ToolEvent]) -> tuple[int, ...]:
    return tuple(sorted(e.step for e in events))
