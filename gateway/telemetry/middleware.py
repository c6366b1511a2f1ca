"""A SERVER span per request, continuing the client's trace when it sent ``traceparent``.

The guard's decision is read from the response headers every guarded answer carries
(x-loopguard-action, x-loopguard-detector), so the span reports what the client was told. The
session is hashed (the span never carries a raw session id: it may be a user id). A guarded
request's is the session the guard judged it in, whatever its source (headers, the body's user
or metadata, a fingerprint), as the pipeline publishes it (``pipeline.published``) by the time
the response starts: the same key its audit events name. A relayed request's comes from the
session headers. Health and metrics scrapes are not traced: they are noise in a trace store.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.config import SessionsConfig
from gateway.metrics.registry import route_of
from gateway.pipeline.published import SESSION
from gateway.protocols.registry import KEY_PLACES, guarded_route
from gateway.state.session import CLIENT_HEADER, session_id
from gateway.telemetry.sink import session_hash
from gateway.trace.model import Conversation

_W3C = TraceContextTextMapPropagator()
_NO_TURNS = Conversation(())
_UNTRACED = frozenset({"/healthz", "/readyz", "/metrics"})


class TracingMiddleware:
    def __init__(self, app: ASGIApp, tracer: trace.Tracer, sessions: SessionsConfig) -> None:
        self.app, self.tracer = app, tracer
        # Only the headers: the body is the pipeline's to parse, once.
        self.sessions = sessions.model_copy(update={"body_user": False, "metadata_key": None})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in _UNTRACED:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        route = route_of(scope["path"])
        span = self.tracer.start_span(
            f"{scope['method']} {route}",
            context=_W3C.extract(headers),
            kind=SpanKind.SERVER,
            attributes=self._request_attributes(scope, route, headers),
        )
        token = context.attach(trace.set_span_in_context(span))
        unjudged = SESSION.set(None)  # a context reused across requests never shows an earlier session

        async def traced_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                _response_attributes(span, message)
            await send(message)

        try:
            await self.app(scope, receive, traced_send)
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            SESSION.reset(unjudged)
            context.detach(token)
            span.end()

    def _request_attributes(self, scope: Scope, route: str, headers: dict[str, str]) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "http.request.method": scope["method"],
            "url.path": scope["path"],
            "http.route": route,
            "loopguard.protocol": _protocol(scope["path"]),
        }
        if any(headers.get(name) for name in self.sessions.headers):  # the guard's own rule
            if not headers.get(CLIENT_HEADER) and (client := KEY_PLACES.credential_hash(headers)):
                headers = {**headers, CLIENT_HEADER: client}  # what the client-key gate will set
            attributes["loopguard.session_hash"] = session_hash(session_id(headers, {}, _NO_TURNS, self.sessions))
        return attributes


def _protocol(path: str) -> str:
    """The wire protocol of a guarded route (``Declaration.family``); every other route is
    relayed as it is."""
    found = guarded_route(path)
    return found[1].declared.family if found is not None else "passthrough"


def _response_attributes(span: trace.Span, message: Message) -> None:
    if judged := SESSION.get():  # read in the responding context: the pipeline set it there
        span.set_attribute("loopguard.session_hash", session_hash(judged))
    status = message["status"]
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))
    for name, value in message.get("headers", ()):
        if name == b"x-loopguard-action":
            span.set_attribute("loopguard.action", value.decode("latin-1"))
        elif name == b"x-loopguard-detector":
            span.set_attribute("loopguard.detector", value.decode("latin-1"))
