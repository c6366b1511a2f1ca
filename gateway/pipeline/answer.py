"""Terminate mode ``answer``: the model writes the run's final reply itself, tools closed.

The upstream is asked once more with the loop's evidence as a note where the model reads it
first (the policy's ``answer`` text, placed like a warning) and tools disabled the protocol's way
(``Edits.without_tools``). Its reply is the final one: a unary reply is relayed as the upstream
wrote it, a stream is relayed through the adapter's stream filter as it arrives. The template
(mode ``reply``) takes its place when the upstream fails, does not finish within
``answer_timeout_s``, writes no text, ends before its protocol's terminal event (cut, or a 200
that is not the protocol's JSON/SSE), or still calls a tool (a closed tool is never relayed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from gateway.pipeline.exchange import Exchange
from gateway.pipeline.verdict import fail_open
from gateway.policy.engine import Judgement
from gateway.protocols import usage
from gateway.protocols.base import StreamFilter
from gateway.trace.model import ToolCall
from gateway.upstream.base import UpstreamRequest, UpstreamResponse, json_body, opens_whole
from gateway.upstream.errors import UpstreamError, UpstreamInvalidReply
from gateway.wire import codec


class _Closed:
    """The judge of an answer written with tools closed: every call is refused. ``closed``
    tells a stream filter that holds several choices whole that any call fails the answer."""

    closed = True

    def __call__(self, call: ToolCall, position: int, choice: int = 0) -> bool:
        return False


closed = _Closed()


def _finished(ex: Exchange, reply: Any, answer: str) -> Any:
    """``reply`` ending with the action its agent ends a run with (its profile's ``finish``),
    carrying the model's ``answer``: an agent that ends by an action (mini-SWE-agent submits by
    a command) refuses a bare answer as a reply without one, and its user never sees it. The
    reply itself for an agent that ends by answering, or a protocol whose answers stay text."""
    assert ex.plan is not None
    policy, with_call = ex.plan.policy, ex.adapter.replies.with_call
    profile = policy.catalog.by_name.get(policy.profile) if policy.catalog is not None else None
    if profile is None or profile.finish is None or with_call is None:
        return reply
    # Only a tool the request declares: an agent acting in text, or one taken for this agent by
    # its tools, has no such tool to run.
    declared = ex.plan.trace.declared_tools
    if declared is None or profile.finish.tool not in declared:
        return reply
    return with_call(reply, profile.finish.call(answer, f"call_loopguard_{ex.request_id[:16]}"))


class FinalAnswer:
    """One attempt at a model-written final answer. ``failed`` says why the template replaces
    it (None while it holds)."""

    def __init__(self, ex: Exchange, judgement: Judgement) -> None:
        assert ex.plan is not None
        self.ex = ex
        terminate = ex.plan.policy.interventions.terminate
        self.deadline = time.monotonic() + terminate.answer_timeout_s
        self.failed: str | None = None
        self.closing: list[bytes] = []  # a relayed answer's last pieces, not yet sent
        self.text = ""  # the text of an answer read whole (``read``)
        try:
            self.payload: dict[str, Any] | None = self._payload(judgement)
        except Exception:
            fail_open(ex, "terminate_answer")
            self.payload, self.failed = None, "guard_error"

    def _payload(self, judgement: Judgement) -> dict[str, Any]:
        ex, plan = self.ex, self.ex.plan
        assert plan is not None
        note = plan.policy.render("answer", judgement.finding, progress=plan.policy.progress(plan.trace))
        items = ex.adapter.edits.add_anchor(plan.messages, note, plan.policy.interventions.warn.placement)
        return ex.adapter.edits.without_tools(ex.payload_with(items))

    async def ask(self) -> UpstreamResponse | None:
        """The upstream's answer once its headers arrived; None (``failed`` set) otherwise."""
        if self.payload is None:
            return None
        out = self.ex.outgoing
        self.ex.resent += 1
        request = UpstreamRequest("POST", out.path, out.query, out.headers, codec.dumps(self.payload))
        started = time.perf_counter()
        try:
            response = await asyncio.wait_for(self.ex.upstream.send(request), self._left())
        except (UpstreamError, TimeoutError) as exc:
            self._fail("timeout" if isinstance(exc, TimeoutError) else "upstream_error")
            return None
        finally:
            self.ex.clock.waited(started)
        if response.status != 200:
            await response.aclose()
            self._fail(f"status_{response.status}")
            return None
        return response

    async def read(self, upstream: UpstreamResponse) -> bytes | None:
        """A unary answer: the upstream's reply bytes when they hold text and no call."""
        ex = self.ex
        started = time.perf_counter()
        try:
            content = await asyncio.wait_for(upstream.aread(), self._left())
        except (UpstreamError, TimeoutError) as exc:
            self._fail("timeout" if isinstance(exc, TimeoutError) else "upstream_error")
            return None
        finally:
            await upstream.aclose()
            ex.clock.waited(started)
        try:
            reply = codec.loads(content)
            # A dict, or what else its protocol answers whole (Gemini's streamed JSON array);
            # an adapter raises on what it cannot read (then: unreadable).
            said = ex.adapter.replies.answer(reply)
            calls = said is None or bool(said.calls) or any(ex.adapter.replies.proposed_calls(reply))
        except Exception:
            self._fail("unreadable")
            return None
        if said is None or calls:
            self._fail("tool_call" if said is not None else "unreadable")
            return None
        if not said.text.strip():
            self._fail("no_text")
            return None
        self.text = said.text
        self._count(content, said.text)
        finished = _finished(ex, reply, said.text)
        if finished is not reply:
            reply, content = finished, codec.dumps(finished)
        ex.reply = reply
        return content

    async def relay(self, tool_filter: StreamFilter, upstream: UpstreamResponse) -> AsyncIterator[bytes]:
        """A streamed answer through ``tool_filter`` (judging with ``closed``): text goes out as
        it arrives. When it fails the stream is left for the caller to end with the template,
        what the client had open closed first (``StreamFilter.cut``).
        The last piece waits in ``closing`` so the outcome is audited before the client can
        see its stream end."""
        raw, held = bytearray(), list[bytes]()
        try:
            async for data in self._chunks(upstream):
                raw += data
                for out in tool_filter.feed(data):
                    if held:
                        yield held.pop()
                    held.append(out)
            if not tool_filter.complete:
                # Ended cleanly but before its terminal event (cut mid-event, or a 200 that is
                # not the protocol's SSE): a truncated answer is no answer, the template follows.
                self._fail("truncated")
                held += tool_filter.cut(bytes(raw))
                return
            held += tool_filter.end_upstream()
        except (UpstreamError, TimeoutError) as exc:
            self._fail("timeout" if isinstance(exc, TimeoutError) else "upstream_error")
            # Cut mid-answer: the client may hold an open text block or item; it is closed
            # (with the text so far) before the template follows, or its stream would be broken.
            held += tool_filter.cut(bytes(raw))
            return
        finally:
            self.closing = held
            await upstream.aclose()
        if tool_filter.needs_decision:  # the model called a tool anyway: it was held, not sent
            self._fail("tool_call")
            return
        said = self.ex.adapter.streams.answer(bytes(raw))
        self._count(bytes(raw), said.text if said is not None else "")

    async def _chunks(self, upstream: UpstreamResponse) -> AsyncIterator[bytes]:
        """The answer's bytes; one JSON body (by its content type or its first bytes) is no
        event stream: read through the filter its call would pass as unread bytes."""
        if json_body(upstream.headers):
            raise UpstreamInvalidReply("not an event stream")
        chunks = upstream.aiter_raw().__aiter__()
        opening: bytes | None = b""
        while True:
            started = time.perf_counter()
            try:
                data = await asyncio.wait_for(chunks.__anext__(), self._left())
            except StopAsyncIteration:
                return
            finally:
                self.ex.clock.waited(started)
            if opening is not None:
                opening += data
                whole = opens_whole(opening)
                if whole is None:
                    continue
                if whole:
                    raise UpstreamInvalidReply("not an event stream")
                data, opening = opening, None
            yield data

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def _fail(self, why: str) -> None:
        self.failed = why
        self.ex.log.warning("terminate_answer_fallback", reason=why)

    def _count(self, body: bytes, text: str) -> None:
        ex = self.ex
        tokens = ex.adapter.replies.output_tokens(body)
        model = ex.adapter.requests.model(ex.payload) or "unknown"
        ex.gateway.metrics.answered(model, tokens if tokens is not None else usage.estimated(text))
