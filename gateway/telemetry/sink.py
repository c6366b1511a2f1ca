"""Interventions onto the request's span: the audit bus calls sinks inside the request, so the
current span is that request's. Each event becomes a span event; its session, hashed, becomes
an attribute (the span carries no raw session id: it may be a user id)."""

from __future__ import annotations

import hashlib

from opentelemetry import trace

from gateway.audit.events import AuditEvent, InterventionEvent


def session_hash(session: str) -> str:
    return hashlib.sha256(session.encode("utf-8", "replace")).hexdigest()[:16]


class SpanSink:
    name = "telemetry"

    def emit(self, event: AuditEvent) -> None:
        span = trace.get_current_span()
        if not isinstance(event, InterventionEvent) or not span.is_recording():
            return  # other events on the bus (e.g. savings, estimated later) have no request span
        span.set_attribute("loopguard.session_hash", session_hash(event.session))
        if event.request_id:
            span.set_attribute("loopguard.request_id", event.request_id)
        span.add_event(
            "loop_intervention",
            {
                "loopguard.detector": event.detector,
                "loopguard.action": event.action,
                "loopguard.would": event.would,
                "loopguard.phase": event.phase,
                "loopguard.count": event.count,
                "loopguard.tool": event.tool or "",
                "loopguard.shadow": event.shadow,
            },
        )
