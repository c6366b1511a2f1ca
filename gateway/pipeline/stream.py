"""The streamed reply (an event stream, whatever the request asked): relay content at once,
hold each tool call until judged.

One attempt relays an upstream stream through the adapter's stream filter; a refused first call is
re-asked (a loop) on a new upstream stream that continues the same client stream; when the
model insists (or the policy says terminate) the stream ends with the final text. Decisions
taken after the headers went out are also written as SSE comments, which clients skip.

When the turn requires a tool, each attempt is held until the model's answer is known, and only
the last one goes to the client, so it receives one valid stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from starlette.responses import Response

from gateway.guard.decision import Move, decide
from gateway.pipeline import expect, terminate
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.judging import StreamJudge
from gateway.pipeline.remember import remember
from gateway.pipeline.request_log import LoggedStream
from gateway.pipeline.verdict import fail_open
from gateway.pipeline.vetoes import reask, veto
from gateway.policy.actions import Action
from gateway.protocols.base import StreamFilter
from gateway.protocols.failure import upstream_failure
from gateway.protocols.streaming import Held
from gateway.upstream.base import UpstreamResponse, json_body, opens_whole
from gateway.upstream.errors import UpstreamError, UpstreamInvalidReply
from gateway.web.responses import uncommented


def respond(ex: Exchange, upstream: UpstreamResponse) -> Response:
    if ex.expectation is not None:
        return LoggedStream(ex, ex.verdict.headers(upstream.headers), noted(ex, _held(ex, upstream)), upstream.aclose)
    judge = StreamJudge(ex)
    tool_filter = ex.adapter.streams.filter(judge, ex.payload, ex.stream_options())
    chunks = noted(ex, _attempt(ex, upstream, judge, tool_filter, last=True))
    if tool_filter.holds_whole:
        return _Decided(ex, upstream, chunks)
    return LoggedStream(ex, ex.verdict.headers(upstream.headers), chunks, upstream.aclose)


def noted(ex: Exchange, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream as it goes out: with the gateway's SSE notes, unless its protocol's clients
    cannot skip them."""
    return chunks if ex.adapter.declared.stream_notes else uncommented(chunks)


class _Decided(Response):
    """A stream its filter holds whole until every call in it is judged (several chat choices):
    nothing reaches the client before the decision, so the headers wait for the first bytes
    and name it (``x-loopguard-action: terminate`` ...), as a unary reply's do. The SSE notes
    of the decisions wait with them; a keepalive comment sends the headers as they stand."""

    def __init__(self, ex: Exchange, upstream: UpstreamResponse, chunks: AsyncIterator[bytes]) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = []
        self._ex, self._upstream, self._chunks = ex, upstream, chunks

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        first: list[bytes] = []
        failure: UpstreamError | None = None
        try:
            async for chunk in self._chunks:
                first.append(chunk)
                if not chunk.startswith(_NOTE):
                    break
        except UpstreamError as exc:
            failure = exc
        except BaseException:  # cancelled (the client left) before the headers: close everything
            try:
                await _close(self._chunks)
            finally:
                await self._upstream.aclose()
            raise
        headers = self._ex.verdict.headers(self._upstream.headers)
        relay = LoggedStream(self._ex, headers, _resumed(first, failure, self._chunks), self._upstream.aclose)
        await relay(scope, receive, send)


_NOTE = b": loopguard action="


async def _resumed(
    first: list[bytes], failure: UpstreamError | None, rest: AsyncIterator[bytes]
) -> AsyncIterator[bytes]:
    try:
        for chunk in first:
            yield chunk
        if failure is not None:
            raise failure
        async for chunk in rest:
            yield chunk
    finally:
        await _close(rest)


async def _held(ex: Exchange, upstream: UpstreamResponse) -> AsyncIterator[bytes]:
    """Each attempt held whole until the model's answer is known; while it is, the client gets
    the stream driver's keepalive (``Held``: every ``keepalive_s`` of a quiet hold)."""
    current, held = upstream, Held(ex.stream_options().keepalive_s)
    while True:
        held.clear()
        try:
            async for chunk in _attempt(ex, current):
                held.hold(chunk)
                owed: list[bytes] = []
                held.keepalive(owed)
                for keepalive in owed:
                    yield keepalive
        finally:
            if current is not upstream:
                await current.aclose()
        whole = b"".join(held)
        said = expect.plain_answer(ex, stream=whole) if ex.verdict.action != Action.TERMINATE else None
        if said is None:
            yield whole
            break
        if (retry := await expect.retry(ex, said)) is not None:
            assert ex.expectation is not None
            yield expect.note(ex.expectation, Action.REJECT)
            current = retry
            continue
        for chunk in expect.warn_stream(ex, whole):
            yield chunk
        break
    await remember(ex)  # before the stream ends: the client may continue the chain at once


async def _close(chunks: AsyncIterator[bytes]) -> None:
    """Close ``chunks``: every stream here is an async generator, closed so its ``finally`` runs."""
    if isinstance(chunks, AsyncGenerator):
        await chunks.aclose()


def _failed(ex: Exchange, tool_filter: StreamFilter, exc: UpstreamError | None) -> list[bytes]:
    """The client stream ends with its protocol's error events, and the log says which."""
    failure = upstream_failure(exc)
    _noted(ex, tool_filter, failure.code, type(exc).__name__ if exc else "truncated")
    return tool_filter.fail(b"", failure)


def _noted(ex: Exchange, tool_filter: StreamFilter, code: str, error: str) -> None:
    ex.log.warning("upstream_stream_failed", error=error, code=code, ending=tool_filter.failure_event)
    ex.ending = tool_filter.failure_event


async def _attempt(
    ex: Exchange,
    upstream: UpstreamResponse,
    judge: StreamJudge | None = None,
    tool_filter: StreamFilter | None = None,
    last: bool = False,
) -> AsyncIterator[bytes]:
    """One answer: the upstream stream and its re-asks, relayed through one stream filter
    (``respond`` may have made it, with its judge). ``last``: nothing follows it in the client
    stream, so the reply is remembered before the stream ends.

    The upstream is read right here, not through a helper generator: every chunk of a stream
    passes through each async generator between the upstream and the client."""
    if judge is None or tool_filter is None:
        judge = StreamJudge(ex)
        tool_filter = ex.adapter.streams.filter(judge, ex.payload, ex.stream_options())
    feed, clock, current = tool_filter.feed, ex.clock, upstream
    try:
        while True:
            try:
                if json_body(current.headers):  # a re-ask or retry answered whole
                    raise UpstreamInvalidReply("not an event stream")
                opening: bytes | None = b""  # the round's first bytes, until they show its shape
                async for raw in current.aiter_raw():
                    if opening is not None:
                        opening += raw
                        whole = opens_whole(opening)
                        if whole is None:
                            continue
                        if whole:  # one JSON body labelled as events
                            raise UpstreamInvalidReply("not an event stream")
                        raw, opening = opening, None
                    started = time.perf_counter()
                    out = feed(raw)
                    clock.took(started)
                    if out:  # one write for what one read brought: each write is a trip through the server
                        yield out[0] if len(out) == 1 else b"".join(out)
                    if tool_filter.failure is not None:  # it ended the client stream: read no more
                        break
            except UpstreamError as exc:
                # Reset, closed, silent past the idle timeout, or not events at all: a reply
                # read into this stream as events would pass unjudged (its calls are no events).
                for chunk in _failed(ex, tool_filter, exc):
                    yield chunk
                break
            except asyncio.CancelledError:
                # The client left while the upstream's end of body was on its way. One that had
                # the closing response (Codex hangs up as soon as it has ``response.completed``)
                # may continue from it: it is remembered before the cancel goes on.
                if last and current is upstream and tool_filter.complete and tool_filter.reply is not None:
                    ex.reply = tool_filter.reply
                    await remember(ex)
                raise
            if tool_filter.failure is not None:  # the upstream broke its protocol: ended there
                _noted(ex, tool_filter, tool_filter.failure.code, "invalid")
                break
            released = tool_filter.end_upstream()
            # A stream held whole releases its round only after the decision, so the headers
            # that wait for its first bytes name what the client receives.
            if not (tool_filter.holds_whole and tool_filter.complete):
                for chunk in released:
                    yield chunk
                released = []
            if not tool_filter.complete:  # ended cleanly, before its terminal event
                for chunk in _failed(ex, tool_filter, None):
                    yield chunk
                break
            if tool_filter.round.judge_errors:
                fail_open(ex, "stream_judge")
            judge.record_shadowed()
            plan = ex.plan
            decision = decide(judge.judged(tool_filter.needs_decision), plan.policy if plan else None, ex.reasks)
            if decision.move == Move.PASS:
                for chunk in released:
                    yield chunk
                break
            judge.record_others()
            refusal = decision.refusal
            assert refusal is not None
            if decision.move == Move.DROP:
                await veto(ex, refusal)  # the calls before it went out; the rest are dropped
                for chunk in released:
                    yield chunk
                yield terminate.note(Action.REJECT, refusal)
                break
            for chunk in released:  # nothing: a re-asked or ended round was withheld whole
                yield chunk
            if decision.move == Move.TERMINATE:
                async for chunk in terminate.stream(ex, tool_filter, judge, decision):
                    yield chunk
                break
            await veto(ex, refusal)
            yield terminate.note(Action.REJECT, refusal)
            if current is not upstream:
                await current.aclose()
            current = await reask(ex)
            if current.status != 200:
                ex.log.warning("reask_failed", status=current.status)
                break
            judge.renew()
            tool_filter.begin_continuation()
    finally:
        if current is not upstream:
            await current.aclose()
    for chunk in tool_filter.final():
        yield chunk
    ex.reply = tool_filter.reply
    if last:
        await remember(ex)
