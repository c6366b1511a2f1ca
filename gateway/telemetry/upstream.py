"""The upstream call as a CLIENT span, child of the request's span, with ``traceparent`` sent.

The span lasts until the response body is read or closed, so a streamed answer's span covers
the whole stream; the request span gets the total upstream time and the number of calls
(re-asks are calls too).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any
from weakref import WeakKeyDictionary

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.upstream.base import Upstream, UpstreamRequest, UpstreamResponse

_W3C = TraceContextTextMapPropagator()
_TRACE_HEADERS = frozenset({b"traceparent", b"tracestate"})


class TracingUpstream:
    def __init__(self, inner: Upstream, tracer: trace.Tracer) -> None:
        self.inner = inner
        self.tracer = tracer
        self._totals: WeakKeyDictionary[Any, list[float]] = WeakKeyDictionary()

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        parent = trace.get_current_span()
        span = self.tracer.start_span(
            f"upstream {request.method} /{request.path}",
            kind=SpanKind.CLIENT,
            attributes={"http.request.method": request.method, "url.path": "/" + request.path},
        )
        carrier: dict[str, str] = {}
        _W3C.inject(carrier, context=trace.set_span_in_context(span))
        # Ours replaces a client's: the upstream's parent is this call, itself in the client's trace.
        headers = [(k, v) for k, v in request.headers if k.lower() not in _TRACE_HEADERS]
        headers += [(k.encode(), v.encode("latin-1")) for k, v in carrier.items()]
        outgoing = UpstreamRequest(
            request.method, request.path, request.query, headers, request.body, request.client_body
        )
        started = time.perf_counter()
        try:
            response = await self.inner.send(outgoing)
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            self._end(span, parent, started)
            raise
        span.set_attribute("http.response.status_code", response.status)
        if response.status >= 500:
            span.set_status(Status(StatusCode.ERROR))
        span.add_event("response_headers")
        return _TracedResponse(response, lambda: self._end(span, parent, started))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _end(self, span: trace.Span, parent: trace.Span, started: float) -> None:
        span.end()
        if not parent.is_recording():
            return
        total = self._totals.setdefault(parent, [0.0, 0])
        total[0] += (time.perf_counter() - started) * 1000
        total[1] += 1
        parent.set_attribute("loopguard.upstream.duration_ms", round(total[0], 3))
        parent.set_attribute("loopguard.upstream.calls", int(total[1]))


class _TracedResponse:
    """The upstream response, ending its span once (read to the end, or closed)."""

    def __init__(self, inner: UpstreamResponse, end: Any) -> None:
        self.inner, self._end = inner, end
        self.status, self.headers = inner.status, inner.headers

    def __getattr__(self, name: str) -> Any:  # anything else a transport's response offers
        return getattr(self.inner, name)

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner.aiter_raw():
                yield chunk
        finally:
            self._done()

    async def aread(self) -> bytes:
        try:
            return await self.inner.aread()
        finally:
            self._done()

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self._done()

    def _done(self) -> None:
        end, self._end = self._end, None
        if end is not None:
            end()
