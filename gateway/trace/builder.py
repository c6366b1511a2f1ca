"""Conversation -> Trace: pair each tool call with its result, scope it to the run, normalize.

Two passes: a cheap one over every turn in scope (pairing calls with results, counting rounds),
then the text work (canonical arguments, result normalization, hashing) only for the latest
``settings.horizon`` calls, the only ones a detector window can reach.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.trace.memo import Memo
from gateway.trace.model import (
    OWN_TEXT_MARKER, VETO_MARKER, Conversation, Status, ToolCall, ToolEvent, Trace, Turn,
)
from gateway.trace.normalize import args_info, classify, result_info
from gateway.trace.roles import looks_read_only, neutral_by_shape
from gateway.trace.settings import TraceSettings, tool_key


@dataclass(slots=True)
class _Pending:
    """A call found in the first pass, with the turn that answered it (if any)."""

    call: ToolCall
    round: int
    message_index: int
    result: Turn | None = None
    user_turn: int = 0


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
        return cls(settings, tools, settings.memo("args"), settings.memo("results"), settings.polling_tools,
                   settings.neutral_names)


def build_trace(conv: Conversation, settings: TraceSettings, memo: dict | None = None) -> Trace:
    """``memo`` (see gateway/guard/history.py) carries events over from the previous request of
    the same conversation; only a caller that keeps ``conv``'s turns alive may pass one, since
    it is keyed by their identity."""
    start = run_start(conv.turns) if settings.scope == "run" else 0
    earlier, users, _ = _pair(conv.turns, 0, start)
    pending, _, rounds = _pair(conv.turns, start, len(conv.turns), users)
    skipped = max(0, len(pending) - settings.horizon)
    ctx = _Context.of(settings, conv.tools)
    events = _events(pending[skipped:], skipped + 1, ctx, memo)
    kept = earlier[len(earlier) - settings.prior_horizon:] if settings.prior_horizon else []
    # Earlier turns' events get steps <= 0 (the latest is 0): they are not part of the run.
    prior = _events(kept, 1 - len(kept), ctx, memo)
    return Trace(events, conv.turns, start, rounds, conv.tools, skipped, prior=prior)


def _events(pending: list[_Pending], first: int, ctx: _Context, memo: dict | None) -> tuple[ToolEvent, ...]:
    if memo is None:
        return tuple(_event(p, first + i, ctx) for i, p in enumerate(pending))
    return tuple(_remembered(p, first + i, ctx, memo) for i, p in enumerate(pending))


def _remembered(p: _Pending, step: int, ctx: _Context, memo: dict) -> ToolEvent:
    # Same call object, same result turn object, same position: the same event as last time.
    key = (id(p.call), id(p.result), step, p.round, p.user_turn)
    event = memo.get(key)
    if event is None:
        event = memo[key] = _event(p, step, ctx)
    return event


def proposed_events(trace: Trace, calls: tuple[ToolCall, ...], settings: TraceSettings) -> tuple[ToolEvent, ...]:
    """Events for calls the model proposes in the response being judged: no result yet, one new
    round (``Trace.with_events`` counts it), steps continuing the trace."""
    first = trace.total_events + 1
    round_ = trace.rounds + 1
    ctx = _Context.of(settings, trace.declared_tools)
    user_turn = trace.events[-1].user_turn if trace.events else sum(map(is_genuine_user, trace.turns))
    return tuple(
        _event(_Pending(call, round_, -1, None, user_turn), first + i, ctx, proposed=True)
        for i, call in enumerate(calls)
    )


def run_start(turns: tuple[Turn, ...]) -> int:
    """Index of the first turn after the last genuine user turn (0 when there is none)."""
    for i in range(len(turns) - 1, -1, -1):
        if is_genuine_user(turns[i]):
            return i + 1
    return 0


def is_genuine_user(turn: Turn) -> bool:
    """A user prompt, not one of our own notes (a re-ask, or a warning placed as a user message:
    they start with the marker, in any case)."""
    return turn.role == "user" and turn.text.lstrip()[:10].lower() != OWN_TEXT_MARKER


# --- pass 1: pairing -------------------------------------------------------------------------


def _pair(turns: tuple[Turn, ...], start: int, end: int, users: int = 0) -> tuple[list[_Pending], int, int]:
    """Calls of ``turns[start:end]`` in issue order, each with its result turn and user turn
    (``users`` genuine user messages came before ``start``); the genuine user messages up to
    ``end``; the number of rounds.

    A result pairs with the nearest earlier unanswered call carrying its id (ids reused by some
    providers, e.g. "call_0" every round, still pair correctly); a result without an id
    (legacy ``role: function``) pairs with the latest round's first unanswered call of its name,
    else its first unanswered call. Results that match no call are ignored.
    """
    calls: list[_Pending] = []
    by_id: dict[str, list[_Pending]] = {}
    last_round: list[_Pending] = []
    rounds = 0
    for turn in turns[start:end]:
        role = turn.role
        if role == "tool":
            match = _match(turn, by_id, last_round)
            if match is not None:
                match.result = turn
        elif role == "assistant" and turn.tool_calls:
            rounds += 1
            if len(turn.tool_calls) == 1:  # the common case, without the general bookkeeping
                p = _Pending(turn.tool_calls[0], rounds, turn.index, None, users)
                last_round = [p]
                calls.append(p)
                if p.call.id:
                    by_id[p.call.id] = [p]
            else:
                last_round = [_Pending(c, rounds, turn.index, None, users) for c in turn.tool_calls]
                calls.extend(last_round)
                _register(by_id, last_round)
        elif role == "user":
            users += is_genuine_user(turn)
    return calls, users, rounds


def _register(by_id: dict[str, list[_Pending]], round_calls: list[_Pending]) -> None:
    # A new call with a reused id supersedes an older unanswered one: the next result with that
    # id is nearer to the new call. Calls of one round sharing an id pair in order.
    fresh: set[str] = set()
    for p in round_calls:
        call_id = p.call.id
        if not call_id:
            continue
        if call_id in fresh:
            by_id[call_id].append(p)
        else:
            fresh.add(call_id)
            by_id[call_id] = [p]


def _match(turn: Turn, by_id: dict[str, list[_Pending]], last_round: list[_Pending]) -> _Pending | None:
    if turn.tool_call_id:
        queue = by_id.get(turn.tool_call_id)
        while queue:
            p = queue.pop(0)
            if p.result is None:  # answered calls left here were paired by order
                return p
        if any(p.call.id for p in last_round):
            return None  # an id we never issued: a result without a call
    unanswered = [p for p in last_round if p.result is None]
    named = [p for p in unanswered if turn.name and p.call.name == turn.name]
    return (named or unanswered or [None])[0]


# --- pass 2: the text work -------------------------------------------------------------------


def _event(p: _Pending, step: int, ctx: _Context, *, proposed: bool = False) -> ToolEvent:
    call = p.call
    args = args_info(call.arguments, ctx.settings, ctx.args_memo)
    declared = None if ctx.tools is None else call.name in ctx.tools
    turn = p.result
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
        round=p.round,
        call_id=call.id,
        tool=call.name,
        raw_args=call.arguments,
        args=args.canonical,
        args_hash=args.hash,
        result=result,
        result_hash=info.hash if info is not None else None,
        status=status,
        declared=declared,
        message_index=p.message_index,
        vetoed=vetoed,
        proposed=proposed,
        polling=args.polling or call.name in ctx.polling_tools,
        neutral=neutral,
        neutral_guess=guess,
        observation=args.read_only or looks_read_only(call.name),
        user_turn=p.user_turn,
        request_text=args.text,
    )
