"""post_call for a stream: LiteLLM's chunk objects through LoopGuard's tool-call filter.

Each chunk goes through the same ``ToolCallFilter`` as the gateway's own streams (as the SSE
event it stands for): content is relayed at once, tool-call chunks are held until their call is
judged. A chunk the filter lets through unchanged goes out as the very object LiteLLM gave; what
the filter rewrites (renumbered or dropped calls, the termination text) is rebuilt as LiteLLM's
``ModelResponseStream``. A refused first call is re-asked through the proxy's router and its
stream continues the client's; the filter's own comments and ``[DONE]`` are LiteLLM's business.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from gateway.guard.response import ProposalJudge, Refusal
from gateway.integrations.litellm.turn import Turn
from gateway.policy.actions import Action
from gateway.protocols.base import StreamOptions
from gateway.protocols.chat.fast import FastToolCallFilter
from gateway.protocols.chat.stream import ToolCallFilter
from gateway.trace.model import ToolCall


_OPTIONS = StreamOptions(keepalive_s=None)  # LiteLLM writes the chunks: no keepalive comments


class _Judges:
    """The filter keeps one callback; each re-ask needs a judge over the extended history."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.current: ProposalJudge = turn.proposal_judge()

    def __call__(self, call: ToolCall, position: int) -> bool:
        return self.current.judge(call, position)

    def renew(self) -> None:
        self.current = self.turn.proposal_judge()


async def relay(turn: Turn, upstream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    judges = _Judges(turn)
    bridge = _Bridge(FastToolCallFilter(judges, options=_OPTIONS), turn.runtime.metrics)
    current = upstream
    while True:
        async for chunk in current:
            for out in bridge.feed(chunk):
                yield out
        for out in bridge.end_upstream():
            yield out
        refusal = judges.current.refusal
        _record_shadowed(turn, judges.current)
        if refusal is None:
            break
        if refusal.position > 0 or not bridge.filter.needs_decision:
            await turn.veto(refusal)  # the calls before it went out; the rest are dropped
            break
        if not turn.may_reask(refusal):
            for out in _terminate(turn, bridge, refusal):
                yield out
            break
        await turn.veto(refusal)
        current = await turn.reask(stream=True)
        judges.renew()
        bridge.filter.begin_continuation()
    for out in bridge.final():
        yield out


def _terminate(turn: Turn, bridge: _Bridge, refusal: Refusal) -> list[Any]:
    turn.record(refusal.judgement, Action.TERMINATE, "response")
    text = turn.termination_text(refusal.judgement)
    if turn.terminate_as_error:  # LiteLLM ends the stream with its error event
        raise turn.termination_error(text)
    return bridge.objects(bridge.filter.terminate(text, turn.model))


def _record_shadowed(turn: Turn, judge: ProposalJudge) -> None:
    for held in judge.shadowed:
        turn.record(held, held.action, "response")


class _Bridge:
    """LiteLLM chunk objects in, LiteLLM chunk objects out, SSE events in between."""

    def __init__(self, stream_filter: ToolCallFilter, metrics: Any) -> None:
        self.filter = stream_filter
        self.metrics = metrics  # a judge that raised kept its call (fail-open): counted here
        self._sent: dict[bytes, Any] = {}  # event bytes -> the chunk object they stand for

    def feed(self, chunk: Any) -> list[Any]:
        raw = b"data: " + orjson.dumps(_as_dict(chunk)) + b"\n\n"
        self._sent[raw] = chunk
        out = self.objects(self.filter.feed(raw))
        if self.filter.round.judge_errors:
            self.metrics.engine.fail_open_errors += len(self.filter.round.judge_errors)
            self.filter.round.judge_errors.clear()
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
            elif raw.startswith(b"data: {"):
                out.append(_chunk(orjson.loads(raw[6:])))
        return out


def _as_dict(chunk: Any) -> dict[str, Any]:
    if isinstance(chunk, dict):
        return chunk
    return chunk.model_dump(exclude_none=True)


def _chunk(data: dict[str, Any]) -> Any:
    from litellm.types.utils import ModelResponseStream  # noqa: PLC0415 - the proxy's own chunk type

    return ModelResponseStream(**data)
