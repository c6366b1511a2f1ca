"""post_call for a stream: LiteLLM's chunk objects through the protocol's stream filter, decided
by the gateway's decision core.

Each chunk goes through the same filter as the gateway's own streams (as the SSE event it stands
for): content is relayed at once, tool-call chunks are held until their call is judged. As there,
a conversation already at warn level or above holds each round's content too, until its calls
are judged, so a refused round's words never reach the client. A chunk
the filter lets through unchanged goes out as the very object LiteLLM gave; what the filter
rewrites (renumbered or dropped calls, the termination text) is rebuilt as LiteLLM's chunk type.
A refused first call is re-asked through the proxy's router and its stream continues the
client's; the end of a run is the model's own answer (tools closed) streamed on, or the template.
The filter's own comments and ``[DONE]`` are LiteLLM's business.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from gateway.guard.decision import ANSWER, ERROR, REPLY, Judged, Move, decide
from gateway.guard.response import ProposalJudge
from gateway.integrations.litellm.turn import Turn
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.protocols.base import StreamFilter, StreamOptions
from gateway.trace.model import ToolCall

_HOLD_TEXT = StreamOptions(hold_text=True)


class _Judge:
    """The filter's judge: one ProposalJudge per alternative answer (chat choice); ``renew``
    for each re-ask (the history grew); ``closed`` while the final answer is written."""

    def __init__(self, turn: Turn, closed: bool = False) -> None:
        self.turn = turn
        self.closed = closed
        self.judges: dict[int, ProposalJudge] = {}

    def __call__(self, call: ToolCall, position: int, choice: int = 0) -> bool:
        if self.closed:
            return False
        judge = self.judges.get(choice)
        if judge is None:
            judge = self.judges[choice] = ProposalJudge(self.turn.plan.policy, self.turn.plan.trace)
        return judge.judge(call, position)

    def judged(self, whole_round: bool) -> Judged:
        judges = [j for _, j in sorted(self.judges.items())]
        return Judged.of(judges, [len(j.calls) for j in judges], whole_round)


def judges(turn: Turn) -> bool:
    """Chat Completions and Responses streams are judged event by event. Anthropic Messages
    streams go to the client as LiteLLM relays them (LiteLLM hands this hook their raw bytes):
    their executed history was judged on the request path, and a final answer asked for there
    was asked with tools closed (recorded as written by the model)."""
    if turn.adapter.name != "anthropic":
        return True
    if turn.answering is not None:
        turn.record(turn.answering, Action.TERMINATE, "request", ANSWER)
    return False


async def relay(turn: Turn, upstream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    judge = _Judge(turn, closed=turn.answering is not None)
    options = _HOLD_TEXT if turn.plan.judgement.action >= Action.WARN else None
    bridge = _Bridge(turn.adapter.streams.filter(judge, turn.payload, options), turn)
    if turn.answering is not None:  # the request path asked for the run's final answer
        async for out in _answer(turn, turn.answering, upstream, "request", bridge):
            yield out
        return
    current = upstream
    while True:
        async for chunk in current:
            for out in bridge.feed(chunk):
                yield out
        for out in bridge.end_upstream():
            yield out
        judged = judge.judged(bridge.filter.needs_decision)
        for held in judged.shadowed:
            turn.record(held, held.action, "response")
        decision = decide(judged, turn.plan.policy, turn.reasks)
        if decision.move == Move.PASS:
            break
        assert decision.refusal is not None and decision.judgement is not None
        if decision.move == Move.TERMINATE:
            async for out in _end(turn, judge, bridge, decision.judgement):
                yield out
            return
        await turn.veto(decision.refusal)
        for other in decision.others:
            turn.record(other.judgement, Action.REJECT, "response")  # left out of its answer
        if decision.move == Move.DROP:  # the calls before it went out; the rest are dropped
            break
        current = await turn.reask(stream=True)
        judge.judges = {}
        bridge.filter.begin_continuation()
    for out in bridge.final():
        yield out


async def _end(turn: Turn, judge: _Judge, bridge: _Bridge, judgement: Judgement) -> AsyncIterator[Any]:
    """The run ends mid-stream: the model's own answer streamed on, or the template (or the error)."""
    if turn.ending == ERROR:  # LiteLLM ends the stream with its error event
        turn.end_with_error(judgement, "response")
    if turn.ending == ANSWER:
        answer = await turn.final_answer(judgement, stream=True)
        if answer is not None:
            judge.closed = True
            bridge.filter.begin_continuation()
            async for out in _answer(turn, judgement, answer, "response", bridge):
                yield out
            return
    turn.record(judgement, Action.TERMINATE, "response", REPLY)
    for out in bridge.objects(bridge.filter.terminate(turn.termination_text(judgement))):
        yield out
    for out in bridge.final():
        yield out


async def _answer(
    turn: Turn, judgement: Judgement, upstream: AsyncIterator[Any], phase: str, bridge: _Bridge
) -> AsyncIterator[Any]:
    """A final answer written with tools closed (the bridge's judge refuses every call): text
    relayed as it comes; a call it makes anyway is held, never relayed, and the template ends
    the stream instead."""
    async for chunk in upstream:
        for out in bridge.feed(chunk):
            yield out
    for out in bridge.end_upstream():
        yield out
    if bridge.filter.needs_decision:
        turn.record(judgement, Action.TERMINATE, phase, REPLY)
        for out in bridge.objects(bridge.filter.terminate(turn.termination_text(judgement))):
            yield out
    else:
        turn.record(judgement, Action.TERMINATE, phase, ANSWER)
    for out in bridge.final():
        yield out


class _Bridge:
    """LiteLLM chunk objects in, LiteLLM chunk objects out, SSE events in between."""

    def __init__(self, stream_filter: StreamFilter, turn: Turn) -> None:
        self.filter = stream_filter
        self.turn = turn  # a judge that raised kept its call (fail-open): counted on its runtime
        self._sent: dict[bytes, Any] = {}  # event bytes -> the chunk object they stand for

    def feed(self, chunk: Any) -> list[Any]:
        raw = self.turn.wire.event(_as_dict(chunk))
        self._sent[raw] = chunk
        out = self.objects(self.filter.feed(raw))
        errors = self.filter.round.judge_errors
        if errors:
            self.turn.runtime.metrics.engine.fail_open_errors += len(errors)
            errors.clear()
        return out

    def end_upstream(self) -> list[Any]:
        return self.objects(self.filter.end_upstream())

    def final(self) -> list[Any]:
        return self.objects(self.filter.final())

    def objects(self, events: list[bytes]) -> list[Any]:
        out = []
        for raw in events:
            original = self._sent.pop(raw, None)
            if original is not None:
                out.append(original)
            elif (data := _data(raw)) is not None:
                out.append(self.turn.wire.chunk(data))
        return out


def _as_dict(chunk: Any) -> dict[str, Any]:
    if isinstance(chunk, dict):
        return chunk
    dumped: dict[str, Any] = chunk.model_dump(exclude_none=True)
    return dumped


def _data(raw: bytes) -> dict[str, Any] | None:
    """The JSON object of an event the filter wrote; None for its comments and ``[DONE]``."""
    for line in raw.split(b"\n"):
        if line.startswith(b"data: {"):
            data: dict[str, Any] = orjson.loads(line[6:])
            return data
    return None
