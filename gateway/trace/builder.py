"""Conversation -> Trace: pair each tool call with its result, scope it to the run, normalize.

Two passes: a cheap one over every turn in scope (pairing calls with results, counting rounds),
then the text work (canonical arguments, result normalization, hashing) only for the latest
``settings.horizon`` calls, the only ones a detector window can reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from gateway.trace.harness import harness_view
from gateway.trace.memo import Memo, TextKey
from gateway.trace.model import VETO_MARKER, CallIndex, Conversation, Status, ToolCall, ToolEvent, Trace, Turn
from gateway.trace.normalize import ArgsInfo, ArgsKey, ResultInfo, args_info, classify, failure_hash, result_info
from gateway.trace.pairing import Issued, Pairing, is_genuine_user, pair
from gateway.trace.paths import CwdReader, resolved
from gateway.trace.roles import looks_read_only, neutral_by_shape
from gateway.trace.settings import TraceSettings, tool_key


@dataclass(frozen=True, slots=True)
class _Context:
    """What every event of one build needs, read once: pydantic private attributes are slow."""

    settings: TraceSettings
    tools: frozenset[str] | None
    args_memo: Memo[ArgsKey, ArgsInfo]
    results_memo: Memo[TextKey, ResultInfo]
    failures_memo: Memo[bytes, tuple[str, str]]
    polling_tools: frozenset[str]
    neutral_tools: frozenset[str]
    cwd: CwdReader

    @classmethod
    def of(cls, settings: TraceSettings, tools: frozenset[str] | None) -> _Context:
        known = _CONTEXTS.get(id(settings))
        if known is None or known[0] is not settings:
            if len(_CONTEXTS) > 64:  # settings come with policies: a handful per process
                _CONTEXTS.clear()
            known = _CONTEXTS[id(settings)] = (settings, {})
        ctx = known[1].get(tools)
        if ctx is None:
            if len(known[1]) > 256:  # declared tool sets differ per agent, not per request
                known[1].clear()
            memos = settings.memos
            ctx = known[1][tools] = cls(
                settings,
                tools,
                memos.args,
                memos.results,
                memos.failures,
                settings.polling_tools,
                settings.neutral_names,
                settings.cwd_reader,
            )
        return ctx


# Contexts by settings (kept alive here, so an id is never reused while listed) and declared
# tools: reading pydantic private attributes costs a call each, and every request needs them.
_CONTEXTS: dict[int, tuple[TraceSettings, dict[frozenset[str] | None, _Context]]] = {}


# The memo's key for the last build (see gateway/guard/history.py).
_BUILT = "built"


@dataclass(frozen=True, slots=True)
class _Built:
    """One build over ``turns[:end]``, kept for the next request of the same conversation."""

    end: int
    last: Turn  # turns[end - 1]: a longer conversation holding this turn there continues this one
    ctx: _Context  # the settings and declared tools the events were made with
    start: int  # run_start
    earlier: Pairing  # the calls before the run
    run: Pairing
    skipped: int  # run calls before the horizon, not materialized
    events: tuple[ToolEvent, ...]  # of run.calls[skipped:]; a run event's step is its position + 1
    prior: tuple[ToolEvent, ...]
    index: CallIndex  # of events[:-1]
    cwd: str  # the working directory the conversation states (Trace.cwd)


def build_trace(conv: Conversation, settings: TraceSettings, memo: dict[str, object] | None = None) -> Trace:
    """``memo`` (see gateway/guard/history.py) carries the previous build of the same
    conversation: a conversation that only grew since then pairs its new turns and makes the
    events of its new and newly answered calls, nothing else. Only a caller that keeps
    ``conv``'s turns alive may pass one, since a build is recognised by their identity."""
    ctx = _Context.of(settings, conv.tools)
    turns = harness_view(conv.turns, settings)
    built = _build(turns, settings, ctx, memo)
    return Trace(
        built.events, turns, built.start, built.run.rounds, conv.tools, built.skipped, prior=built.prior, cwd=built.cwd
    ).indexed(built.index)


def _build(turns: tuple[Turn, ...], settings: TraceSettings, ctx: _Context, memo: dict[str, object] | None) -> _Built:
    by_run = settings.scope == "run"
    # The memo is shared with other derived values; only this module writes its _BUILT key.
    done = cast("_Built | None", memo.get(_BUILT)) if memo is not None else None
    if (
        memo is not None
        and done is not None
        and done.ctx is ctx
        and 0 < done.end <= len(turns)
        and turns[done.end - 1] is done.last
    ):
        new = turns[done.end :]
        if not new:
            return done
        if not (by_run and any(map(is_genuine_user, new))):  # else a new run starts: steps renumber
            built = _grown(done, turns, new, settings)
            memo[_BUILT] = built
            return built
    built = _fresh(turns, by_run, settings, ctx)
    if memo is not None and turns:
        memo[_BUILT] = built
    return built


def _fresh(turns: tuple[Turn, ...], by_run: bool, settings: TraceSettings, ctx: _Context) -> _Built:
    start = run_start(turns) if by_run else 0
    earlier = pair(turns[:start])
    run = pair(turns[start:], earlier.users)
    skipped = max(0, len(run.calls) - settings.horizon)
    cwd = _stated_cwd(turns, ctx)
    # Earlier turns' events get steps <= 0 (the latest is 0): they are not part of the run.
    kept = min(settings.prior_horizon, len(earlier.calls))
    prior = _events(earlier, len(earlier.calls) - kept, 1 - kept, ctx, cwd)
    last = turns[-1] if turns else None
    events = _events(run, skipped, skipped + 1, ctx, cwd)
    index = CallIndex.of(events[:-1])
    return _Built(len(turns), last, ctx, start, earlier, run, skipped, events, prior, index, cwd)  # type: ignore[arg-type]


# Agents state their working directory at the start: the system prompt, the first messages.
_CWD_TURNS = 6


def _stated_cwd(turns: tuple[Turn, ...], ctx: _Context) -> str:
    return ctx.cwd(t.text for t in turns[:_CWD_TURNS] if t.role in ("system", "user"))


def _grown(done: _Built, turns: tuple[Turn, ...], new: tuple[Turn, ...], settings: TraceSettings) -> _Built:
    run = done.run.extended(new)
    skipped = max(0, len(run.calls) - settings.horizon)
    # Calls before the first one the new turns added or answered keep their events.
    same_until = max(skipped, min(run.changed_from, done.skipped + len(done.events)))
    same = done.events[skipped - done.skipped : same_until - done.skipped]
    events = same + _events(run, same_until, same_until + 1, done.ctx, done.cwd)
    return _Built(
        len(turns),
        turns[-1],
        done.ctx,
        done.start,
        done.earlier,
        run,
        skipped,
        events,
        done.prior,
        _grown_index(done, events),
        done.cwd,
    )


def _grown_index(done: _Built, events: tuple[ToolEvent, ...]) -> CallIndex:
    """The index of ``events[:-1]`` from the previous build's: the events from its latest on
    are added (steps are consecutive; those before are the same calls, re-made or not)."""
    if not done.events or not events:
        return CallIndex.of(events[:-1])
    at = done.events[-1].step - events[0].step  # where the previous latest event is now
    if at < 0 or at >= len(events) or events[at].step != done.events[-1].step:
        return CallIndex.of(events[:-1])
    return done.index.extended(events[at:-1], since=events[0].step)


def _events(pairing: Pairing, start: int, first: int, ctx: _Context, cwd: str) -> tuple[ToolEvent, ...]:
    """Events for ``pairing.calls[start:]``, with steps counted from ``first``."""
    calls, results = pairing.calls, pairing.results
    return tuple(
        _event(
            calls[i], results.get(i), first + i - start, ctx, cwd, waited=i > 0 and _waits(calls[i - 1].call, ctx, cwd)
        )
        for i in range(start, len(calls))
    )


def _waits(call: ToolCall, ctx: _Context, cwd: str) -> bool:
    """The call only waits (`sleep 30`, a wait tool): the call after it is paced."""
    return args_info(call.arguments, ctx.settings, ctx.args_memo, call.name, cwd).action == "wait"


def proposed_events(
    trace: Trace, calls: tuple[ToolCall, ...], settings: TraceSettings, after: int = 0
) -> tuple[ToolEvent, ...]:
    """Events for calls the model proposes in the response being judged: no result yet, one new
    round (``Trace.with_events`` counts it), steps continuing the trace. ``after``: calls of the
    same round already made into events (a stream's calls are judged one by one)."""
    first = trace.total_events + 1 + after
    round_ = trace.rounds + 1
    ctx = _Context.of(settings, trace.declared_tools)
    user_turn = trace.events[-1].user_turn if trace.events else sum(map(is_genuine_user, trace.turns))
    waited = bool(trace.events) and trace.events[-1].action == "wait"
    out = []
    for i, call in enumerate(calls):
        issued = Issued(call, round_, -1, user_turn)
        out.append(_event(issued, None, first + i, ctx, trace.cwd, proposed=True, waited=waited))
        waited = out[-1].action == "wait"
    return tuple(out)


def run_start(turns: tuple[Turn, ...]) -> int:
    """Index of the first turn after the last genuine user turn (0 when there is none)."""
    for i in range(len(turns) - 1, -1, -1):
        turn = turns[i]
        if turn.role == "user" and is_genuine_user(turn):
            return i + 1
    return 0


# --- pass 2: the text work -------------------------------------------------------------------


def _event(
    issued: Issued,
    turn: Turn | None,
    step: int,
    ctx: _Context,
    cwd: str,
    *,
    proposed: bool = False,
    waited: bool = False,
) -> ToolEvent:
    call = issued.call
    args = args_info(call.arguments, ctx.settings, ctx.args_memo, call.name, cwd)
    declared = None if ctx.tools is None else call.name in ctx.tools
    result = turn.text if turn is not None else None
    vetoed = result is not None and result.lstrip().startswith(VETO_MARKER)
    info = result_info(result, ctx.settings, ctx.results_memo) if result is not None else None
    if result is not None and info is not None and info.own_text_at is not None and not vetoed:
        result = result[: info.own_text_at].rstrip()  # a warning appended to the result the model read
    # A veto is our observation, not the tool's: the call did not run, so it is an error for the
    # model, and detectors never compare its text as a result.
    status = Status.ERROR if vetoed else classify(info, turn.is_error if turn else None, declared)
    shape = failure = None
    if status is Status.ERROR and not vetoed and result is not None:
        shape, failure = failure_hash(result, call.arguments, ctx.settings, ctx.failures_memo)
    neutral = tool_key(call.name) in ctx.neutral_tools
    guess = (
        not neutral
        and ctx.settings.neutral_by_shape
        and neutral_by_shape(args.text_only, args.text, result, status is Status.OK)
    )
    return ToolEvent(
        step=step,
        round=issued.round,
        call_id=call.id,
        tool=call.name,
        raw_args=call.arguments,
        args=args.canonical,
        args_hash=args.hash,
        result=result,
        result_hash=info.hash if info is not None else None,
        status=status,
        declared=declared,
        message_index=issued.message_index,
        vetoed=vetoed,
        proposed=proposed,
        polling=args.polling or call.name in ctx.polling_tools or args.action == "poll",
        neutral=neutral,
        neutral_guess=guess,
        observation=args.read_only or args.action in _LOOKING or (not args.action and looks_read_only(call.name)),
        user_turn=issued.user_turn,
        request_text=args.text,
        target=args.target,
        failure_hash=shape,
        failure_key=failure,
        action=args.action,
        paced=args.paced or waited,
        file=resolved(args.file, cwd),
    )


_LOOKING = frozenset({"read", "search", "list"})
