"""Keeps events in a bounded list: for tests, the demo, and anything in-process that watches."""

from __future__ import annotations

from collections import deque

from gateway.audit.events import AuditEvent


class MemorySink:
    name = "memory"

    def __init__(self, maxlen: int = 10_000) -> None:
        self.events: deque[AuditEvent] = deque(maxlen=maxlen)

    def emit(self, event: AuditEvent) -> None:
        self.events.append(event)

    def drain(self) -> list[AuditEvent]:
        """The events so far, oldest first, and forget them."""
        out = list(self.events)
        self.events.clear()
        return out
