"""Ending the run. The policy's terminate mode says how the final reply is written: ``answer``
(the model, tools closed: ``answer.py``; the template when it cannot), ``reply`` (the template),
``error`` (the protocol's error). Headers (``x-loopguard-terminate``), the audit event's
``terminate`` field and the SSE note say which one it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import Response

from gateway.guard import decision as core
from gateway.guard.decision import ANSWER, ERROR, REPLY, Decision
from gateway.guard.response import Refusal
from gateway.pipeline.answer import FinalAnswer, closed
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.judging import StreamJudge
from gateway.pipeline.remember import remember
from gateway.pipeline.request_log import LoggedStream, log_request
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.protocols.base import StreamFilter
from gateway.protocols.errors import error_headers
from gateway.protocols.failure import StreamFailure
from gateway.protocols.sse import comment
from gateway.upstream.base import UpstreamResponse, json_body
from gateway.web.responses import relay, uncommented
from gateway.wire import codec

LOOP = "loop_detected"
JSON = (b"content-type", b"application/json")


def text(ex: Exchange, judgement: Judgement) -> str:
    assert ex.plan is not None
    return core.final_text(ex.plan.policy, ex.plan.trace, judgement)


async def at_request(ex: Exchange) -> Response:
    """The executed history already crossed the terminate threshold: the final reply without
    forwarding the request."""
    assert ex.plan is not None
    judgement = ex.plan.judgement
    decision = core.at_request(ex.plan.policy, judgement)
    ex.clock.took(ex.clock.started)
    return await _ended(ex, judgement, decision, "request")


async def unary(ex: Exchange, decision: Decision, reply: Any = None) -> Response:
    """A terminate-level refusal, or the model insists on a refused call and no re-ask is
    left: end the run. ``reply``: the upstream's, whose shape a written final reply takes. A
    stream request whose reply came whole is ended as a stream all the same: its client's
    stream reader (boto3's event-stream parser, an SDK's SSE reader) reads nothing else."""
    refusal = decision.refusal
    assert refusal is not None
    return await _ended(ex, refusal.judgement, decision, "response", reply)


async def _ended(ex: Exchange, judgement: Judgement, decision: Decision, stage: str, like: Any = None) -> Response:
    """The run's final reply, in the shape the request asked for (``ex.stream``): the model's own
    answer (``answer``), else the template or the protocol's error. ``stage``: where the run was
    ended (the audit's ``request`` / ``response``); ``like``: an upstream reply to take the shape of."""
    if decision.ending == ANSWER:
        final = FinalAnswer(ex, judgement)
        upstream = await final.ask()
        if upstream is not None and ex.stream and json_body(upstream.headers):
            # A stream asked for, answered whole (as the reply before it was): the answer is
            # read whole and its text written as the stream the client reads.
            body = await final.read(upstream)
            if body is not None:
                ex.verdict.record(ex, judgement, Action.TERMINATE, stage, ANSWER)
                await remember(ex)
                events = ex.adapter.authored.termination_stream(final.text, ex.payload)
                return LoggedStream(ex, ex.verdict.headers([_stream_type(ex)]), _iterate(events))
            upstream = None
        if upstream is not None and ex.stream:
            ex.verdict.raise_to(Action.TERMINATE, judgement.detector)
            ex.verdict.terminate = ANSWER
            chunks = _answer_stream(ex, final, upstream, judgement, stage)
            # The headers wait for the first piece: an answer that failed before any of it was
            # sent (cut, not SSE, late) is the template, and the header says so.
            first = await anext(chunks, None)
            if final.failed is not None:
                ex.verdict.terminate = REPLY
            chunks = _after(first, chunks)
            chunks = chunks if ex.adapter.declared.stream_notes else uncommented(chunks)
            return LoggedStream(ex, ex.verdict.headers([_stream_type(ex)]), chunks, upstream.aclose)
        body = await final.read(upstream) if upstream is not None else None
        if body is not None:
            ex.verdict.record(ex, judgement, Action.TERMINATE, stage, ANSWER)
            await remember(ex)
            log_request(ex, 200)
            return relay(200, ex.verdict.headers([JSON]), body)
    used = _written(decision)
    ex.verdict.record(ex, judgement, Action.TERMINATE, stage, used)
    if ex.stream and used != ERROR:
        events = ex.adapter.authored.termination_stream(text(ex, judgement), ex.payload)
        return LoggedStream(ex, ex.verdict.headers([_stream_type(ex)]), _iterate(events))
    log_request(ex, 200)
    return _reply(ex, text(ex, judgement), used, like)


async def stream(
    ex: Exchange, tool_filter: StreamFilter, judge: StreamJudge, decision: Decision
) -> AsyncIterator[bytes]:
    """The same mid-stream (the headers are out): the client stream ends with the final reply."""
    refusal = decision.refusal
    assert refusal is not None
    judgement = refusal.judgement
    if decision.ending == ANSWER:
        final = FinalAnswer(ex, judgement)
        upstream = await final.ask()
        if upstream is not None:
            judge.close()
            # Headers still unsent (a stream held whole) name the terminate from here on.
            ex.verdict.raise_to(Action.TERMINATE, judgement.detector)
            ex.verdict.terminate = ANSWER
            yield note(Action.TERMINATE, refusal, ANSWER)
            tool_filter.begin_continuation()
            async for chunk in final.relay(tool_filter, upstream):
                yield chunk
            if final.failed is None:
                ex.verdict.record(ex, judgement, Action.TERMINATE, "response", ANSWER)
                for chunk in final.closing:
                    yield chunk
                return
            for chunk in final.closing:
                yield chunk
    used = _written(decision)
    ex.verdict.record(ex, judgement, Action.TERMINATE, "response", used)
    yield note(Action.TERMINATE, refusal, used)
    if used == ERROR:  # the protocol's final error: SDKs raise it, and clients do not retry it
        ex.ending = tool_filter.failure_event
        ended = tool_filter.fail(b"", StreamFailure(text(ex, judgement), LOOP, final=True))
        if not ended:  # a filter without error events of its own: the adapter's error payload
            ended = [ex.adapter.authored.error_event(ex.adapter.authored.error_body(text(ex, judgement), LOOP, LOOP))]
        for chunk in ended:
            yield chunk
        return
    for chunk in tool_filter.terminate(text(ex, judgement)):
        yield chunk


def note(action: Action, refusal: Refusal, terminate: str | None = None) -> bytes:
    """A decision taken after the headers went out, as an SSE comment clients skip."""
    finding = refusal.judgement.finding
    told = f"action={action.label} detector={finding.detector if finding else 'unknown'}"
    return comment(told if terminate is None else f"{told} terminate={terminate}")


async def _answer_stream(
    ex: Exchange, final: FinalAnswer, upstream: UpstreamResponse, judgement: Judgement, stage: str
) -> AsyncIterator[bytes]:
    """A terminate before any stream went to the client: the model's answer is the whole
    client stream."""
    tool_filter = ex.adapter.streams.filter(closed, ex.payload, ex.stream_options())
    async for chunk in final.relay(tool_filter, upstream):
        yield chunk
    used = ANSWER if final.failed is None else REPLY
    ex.verdict.record(ex, judgement, Action.TERMINATE, stage, used)  # before the stream ends
    ex.reply = tool_filter.reply
    await remember(ex)
    for chunk in final.closing:
        yield chunk
    if used == REPLY:
        finding = judgement.finding
        yield comment(f"action=terminate detector={finding.detector if finding else 'unknown'} terminate=reply")
        for chunk in tool_filter.terminate(text(ex, judgement)):
            yield chunk
    for chunk in tool_filter.final():
        yield chunk


def _written(decision: Decision) -> str:
    """How the final reply is written when the model's own answer is not (or failed)."""
    return ERROR if decision.ending == ERROR else REPLY


def _reply(ex: Exchange, final: str, used: str, like: Any = None) -> Response:
    """The final reply as JSON; ``like``: the upstream reply whose shape it takes (None: the one
    the request asked for)."""
    if used == ERROR:
        assert ex.plan is not None
        error = ex.adapter.authored.error_body(final, LOOP, LOOP)
        headers = ex.verdict.headers([JSON, *error_headers(error)])  # a protocol that names its errors in a header
        return relay(ex.plan.policy.interventions.terminate.status, headers, codec.dumps(error))
    written = ex.adapter.authored.termination_reply(final, ex.payload)
    if like is not None:
        written = ex.adapter.replies.like(like, written)
    return relay(200, ex.verdict.headers([JSON]), codec.dumps(written))


async def _iterate(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _after(first: bytes | None, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``first`` (already read) then ``rest``."""
    if first is None:
        return
    yield first
    async for chunk in rest:
        yield chunk


def _stream_type(ex: Exchange) -> tuple[bytes, bytes]:
    """The content type of a stream the gateway writes: its protocol's (``stream_type``)."""
    return (b"content-type", ex.adapter.declared.stream_type.encode("latin-1"))
