"""Audit events: every finding acted on becomes one
``loop_intervention`` event, fanned out to sinks (the log always, a JSON-lines file, a webhook,
the metrics). Sinks are side channels: none of them can block or fail a request."""

from gateway.audit.bus import AuditBus, build_bus
from gateway.audit.events import InterventionEvent

__all__ = ["AuditBus", "InterventionEvent", "build_bus"]
