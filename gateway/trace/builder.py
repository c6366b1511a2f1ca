"""Conversation -> Trace: pair each tool call with its result, scope it to the run, normalize.

Two passes: a cheap one over every turn in scope (pairing calls with results, counting rounds),
then the text work (canonical arguments, result normalization, hashing) only for the latest
``settings.horizon`` calls, the only ones a detector window can reach.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.trace.memo import Memo
from gateway.trace.model import VETO_MARKER, Conversation, Status, ToolCall, ToolEvent, Trace, Turn
from gateway.trace.pairing import Issued, Pairing, is_genuine_user, pair
from gateway.trace.normalize import args_info, classify, result_info
from gateway.trace.roles import looks_read_only, neutral_by_shape
from gateway.trace.settings import TraceSettings, tool_key


@dataclass(frozen=True, slots=True)
class _Context:
    """What every event of one build needs, read once: pydantic private attributes are slow."""

    settings: TraceSettings
    tools: frozenset[str] | None
    args_memo: Memo
    results_memo: Memo
    polling_tools: frozenset[str]
    neutral_tools: frozenset[str]

    @classmethod
    def of(cls, settings: TraceSettings, tools: frozenset[str] | None) -> _Context:
        known = settings.derived
        ctx = known.get((cls, tools))
        if ctx is None:
            if len(known) > 256:  # declared tool sets differ per agent, not per request
                known.clear()
            ctx = known[(cls, tools)] = cls(settings, tools, settings.memo("args"), settings.memo("results"),
                                            settings.polling_tools, settings.neutral_names)
        return ctx  # type: ignore[return-value]


# The memo's key for the last first pass (every other key is a tuple).
_PAIRED = "pairing"


@dataclass(frozen=True, slots=True)
class _FirstPass:
    """The first pass over ``turns[:end]``: the calls before the run and those in it."""

    end: int
    last: Turn  # turns[end - 1]: a longer conversation holding this turn there continues this one
    by_run: bool  # settings.scope == "run"
    start: int  # run_start
    earlier: Pairing
    run: Pairing


def build_trace(conv: Conversation, settings: TraceSettings, memo: dict | None = None) -> Trace:
    """``memo`` (see gateway/guard/history.py) carries the first pass and the events over from
    the previous request of the same conversation; only a caller that keeps ``conv``'s turns
    alive may pass one, since it is keyed by their identity."""
    first = _first_pass(conv.turns, settings.scope == "run", memo)
    run, earlier = first.run, first.earlier
    skipped = max(0, len(run.calls) - settings.horizon)
    ctx = _Context.of(settings, conv.tools)
    events = _events(run, skipped, skipped + 1, ctx, memo)
    # Earlier turns' events get steps <= 0 (the latest is 0): they are not part of the run.
    kept = min(settings.prior_horizon, len(earlier.calls))
    prior = _events(earlier, len(earlier.calls) - kept, 1 - kept, ctx, memo)
    return Trace(events, conv.turns, first.start, run.rounds, conv.tools, skipped, prior=prior)


def _first_pass(turns: tuple[Turn, ...], by_run: bool, memo: dict | None) -> _FirstPass:
    """Pair the calls of ``turns``; a conversation that only grew since the pass in ``memo``
    pairs just its new turns, unless one of them is a user prompt (a new run starts there)."""
    done = memo.get(_PAIRED) if memo is not None else None
    if done is not None and _continues(done, turns, by_run):
        new = turns[done.end:]
        if not new:
            return done
        if not (by_run and any(map(is_genuine_user, new))):
            first = _FirstPass(len(turns), turns[-1], by_run, done.start, done.earlier, done.run.extended(new))
            memo[_PAIRED] = first
            return first
    start = run_start(turns) if by_run else 0
    earlier = pair(turns[:start])
    if not turns:
        return _FirstPass(0, None, by_run, 0, earlier, earlier)  # type: ignore[arg-type]
    first = _FirstPass(len(turns), turns[-1], by_run, start, earlier, pair(turns[start:], earlier.users))
    if memo is not None:
        memo[_PAIRED] = first
    return first


def _continues(done: _FirstPass, turns: tuple[Turn, ...], by_run: bool) -> bool:
    return done.by_run == by_run and 0 < done.end <= len(turns) and turns[done.end - 1] is done.last


def _events(pairing: Pairing, start: int, first: int, ctx: _Context, memo: dict | None) -> tuple[ToolEvent, ...]:
    """Events for ``pairing.calls[start:]``, with steps counted from ``first``."""
    calls, results = pairing.calls, pairing.results
    if memo is None:
        return tuple(_event(calls[i], results.get(i), first + i - start, ctx) for i in range(start, len(calls)))
    return tuple(_remembered(calls[i], results.get(i), first + i - start, ctx, memo)
                 for i in range(start, len(calls)))


def _remembered(issued: Issued, result: Turn | None, step: int, ctx: _Context, memo: dict) -> ToolEvent:
    # Same call object, same result turn object, same position: the same event as last time.
    key = (id(issued.call), id(result), step, issued.round, issued.user_turn)
    event = memo.get(key)
    if event is None:
        event = memo[key] = _event(issued, result, step, ctx)
    return event


def proposed_events(trace: Trace, calls: tuple[ToolCall, ...], settings: TraceSettings) -> tuple[ToolEvent, ...]:
    """Events for calls the model proposes in the response being judged: no result yet, one new
    round (``Trace.with_events`` counts it), steps continuing the trace."""
    first = trace.total_events + 1
    round_ = trace.rounds + 1
    ctx = _Context.of(settings, trace.declared_tools)
    user_turn = trace.events[-1].user_turn if trace.events else sum(map(is_genuine_user, trace.turns))
    return tuple(
        _event(Issued(call, round_, -1, user_turn), None, first + i, ctx, proposed=True)
        for i, call in enumerate(calls)
    )


def run_start(turns: tuple[Turn, ...]) -> int:
    """Index of the first turn after the last genuine user turn (0 when there is none)."""
    for i in range(len(turns) - 1, -1, -1):
        if is_genuine_user(turns[i]):
            return i + 1
    return 0


# --- pass 2: the text work -------------------------------------------------------------------


def _event(issued: Issued, turn: Turn | None, step: int, ctx: _Context, *, proposed: bool = False) -> ToolEvent:
    call = issued.call
    args = args_info(call.arguments, ctx.settings, ctx.args_memo)
    declared = None if ctx.tools is None else call.name in ctx.tools
    result = turn.text if turn is not None else None
    vetoed = result is not None and result.lstrip().startswith(VETO_MARKER)
    info = result_info(result, ctx.settings, ctx.results_memo) if result is not None else None
    if info is not None and info.own_text_at is not None and not vetoed:
        result = result[:info.own_text_at].rstrip()  # a warning appended to the result the model read
    # A veto is our observation, not the tool's: the call did not run, so it is an error for the
    # model, and detectors never compare its text as a result.
    status = Status.ERROR if vetoed else classify(info, turn.is_error if turn else None, declared)
    neutral = tool_key(call.name) in ctx.neutral_tools
    guess = not neutral and ctx.settings.neutral_by_shape and neutral_by_shape(
        args.text_only, args.text, result, status is Status.OK)
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
        polling=args.polling or call.name in ctx.polling_tools,
        neutral=neutral,
        neutral_guess=guess,
        observation=args.read_only or looks_read_only(call.name),
        user_turn=issued.user_turn,
        request_text=args.text,
    )
