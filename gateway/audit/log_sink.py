"""The sink that is always on: one structlog ``loop_intervention`` line per event."""

from __future__ import annotations

from typing import Any

import structlog

from gateway.audit.events import AuditEvent


class LogSink:
    name = "log"

    def __init__(self, log: Any = None) -> None:
        # A lazy proxy (structlog's default) so a CLI or test configuring structlog later still
        # decides where these lines go.
        self.log = log if log is not None else structlog.get_logger("loopguard")

    def emit(self, event: AuditEvent) -> None:
        self.log.info(event.name, **event.fields())
