"""The streaming response path: relay content at once, hold each tool call until judged.

A refused first call is re-asked on a new upstream stream that continues the same client stream;
when the model insists (or the policy says terminate) the stream ends with the termination text.
Decisions taken after the headers went out are also written as SSE comments, which clients skip.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from gateway.errors import error_body
from gateway.guard.response import ProposalJudge, Refusal
from gateway.policy.actions import Action
from gateway.protocols.chat.sse import comment, data_event
from gateway.protocols.chat.stream import ToolCallFilter
from gateway.server import chat_expect
from gateway.server.exchange import Exchange
from gateway.trace.model import ToolCall
from gateway.upstream.base import UpstreamResponse
from gateway.upstream.errors import UpstreamError


class _Judges:
    """The filter keeps one callback; each re-ask needs a judge over the extended history."""

    def __init__(self, ex: Exchange) -> None:
        self.ex = ex
        self.current: ProposalJudge | None = ex.proposal_judge()

    def __call__(self, call: ToolCall, position: int) -> bool:
        if self.current is None:
            return True
        started = time.perf_counter()
        try:
            return self.current.judge(call, position)
        finally:
            self.ex.took(started)

    def renew(self) -> None:
        self.current = self.ex.proposal_judge()


def relay(ex: Exchange, upstream: UpstreamResponse) -> AsyncIterator[bytes]:
    """The client stream. When the turn requires a tool (seed 000), each attempt is held until
    the model's answer is known (``chat_expect``); otherwise nothing is held."""
    if ex.expectation is not None:
        return chat_expect.relay_held(ex, upstream, relay_once)
    return relay_once(ex, upstream)


async def relay_once(ex: Exchange, upstream: UpstreamResponse, *, log: bool = True) -> AsyncIterator[bytes]:
    judges = _Judges(ex)
    stream = ToolCallFilter(judges)
    current = upstream
    try:
        while True:
            async for chunk in _pump(ex, stream, current):
                yield chunk
            refusal = judges.current.refusal if judges.current else None
            _record_shadowed(ex, judges)
            if refusal is None:
                break
            if refusal.position > 0 or not stream.needs_decision:
                await ex.veto(refusal)  # the calls before it went out; the rest are dropped
                yield _note(Action.REJECT, refusal)
                break
            if not ex.may_reask(refusal):
                for chunk in _terminate(ex, stream, refusal):
                    yield chunk
                break
            await ex.veto(refusal)
            yield _note(Action.REJECT, refusal)
            if current is not upstream:
                await current.aclose()
            current = await ex.reask(stream=True)
            if current.status != 200:
                ex.log.warning("reask_failed", status=current.status)
                break
            judges.renew()
            stream.begin_continuation()
    except UpstreamError as exc:  # headers are out: break the client's stream too (RelayStream)
        ex.log.warning("upstream_stream_broken", error=type(exc).__name__)
        if log:
            ex.log_request(200)
        raise
    finally:
        if current is not upstream:
            await current.aclose()
    for chunk in stream.final():
        yield chunk
    if log:
        ex.log_request(200)


async def _pump(ex: Exchange, stream: ToolCallFilter, upstream: UpstreamResponse) -> AsyncIterator[bytes]:
    async for raw in upstream.aiter_raw():
        started = time.perf_counter()
        out = stream.feed(raw)
        ex.took(started)
        for chunk in out:
            yield chunk
    for chunk in stream.end_upstream():
        yield chunk
    if stream.round.judge_errors:
        ex.fail_open("stream_judge")


def _terminate(ex: Exchange, stream: ToolCallFilter, refusal: Refusal) -> list[bytes]:
    ex.record(refusal.judgement, Action.TERMINATE, "response")
    text = ex.termination_text(refusal.judgement)
    note = _note(Action.TERMINATE, refusal)
    if ex.terminate_as_error:  # the SDK raises on an error payload mid-stream
        return [note, data_event(error_body(text, "loop_detected", code="loop_detected"))]
    return [note, *stream.terminate(text, ex.model)]


def _note(action: Action, refusal: Refusal) -> bytes:
    finding = refusal.judgement.finding
    detector = finding.detector if finding else "unknown"
    return comment(f"action={action.label} detector={detector}")


def _record_shadowed(ex: Exchange, judges: _Judges) -> None:
    if judges.current is not None:
        for held in judges.current.shadowed:
            ex.record(held, held.action, "response")
