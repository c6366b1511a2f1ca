"""The audit bus: a plain loop over sinks. A failing sink is logged and skipped, never fatal,
and never keeps the other sinks from seeing the event (audit is a side channel only). A sink
that fails on an event is handed it once more with its text made safe (``gateway.untrusted``):
what a client wrote into a tool name or a session id must not lose the record of a loop."""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import fields, replace
from typing import Any, Protocol

import structlog

from gateway import untrusted
from gateway.audit.events import AuditEvent
from gateway.audit.log_sink import LogSink


class Sink(Protocol):
    name: str

    def emit(self, event: AuditEvent) -> None: ...


class AuditBus:
    def __init__(self, sinks: list[Sink] | None = None) -> None:
        self.sinks: list[Sink] = list(sinks) if sinks is not None else [LogSink()]
        self.errors: Counter[str] = Counter()  # sink name -> failed emits, for metrics

    def add(self, sink: Sink) -> None:
        self.sinks.append(sink)

    def find(self, name: str) -> Any:
        return next((s for s in self.sinks if s.name == name), None)

    def emit(self, event: AuditEvent, sinks: list[Sink] | None = None) -> None:
        """To every sink, or to ``sinks`` (a follow-up event meant for some of them)."""
        for sink in self.sinks if sinks is None else sinks:
            try:
                sink.emit(event)
            except Exception as exc:
                self._failed(sink, "emit", exc)
                self._emit_escaped(sink, event)

    def _emit_escaped(self, sink: Sink, event: AuditEvent) -> None:
        try:
            sink.emit(escaped(event))
        except Exception:
            pass

    async def start(self) -> None:
        await self._each("start")

    async def stop(self) -> None:
        await self._each("stop")

    async def _each(self, hook: str) -> None:
        for sink in self.sinks:
            method = getattr(sink, hook, None)
            if method is None:
                continue
            try:
                result = method()
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                self._failed(sink, hook, exc)

    def _failed(self, sink: Sink, op: str, exc: Exception) -> None:
        self.errors[sink.name] += 1
        # The error type and text, no traceback: a broken sink would otherwise flood the log.
        structlog.get_logger("loopguard").warning(
            "audit.sink_failed", sink=sink.name, op=op, error=type(exc).__name__, detail=str(exc)[:200]
        )


def escaped(event: AuditEvent) -> AuditEvent:
    """The event with every text field made safe (surrogates escaped, length capped)."""
    # Any: each key names a field that holds a str now, which mypy cannot see through fields().
    changes: dict[str, Any] = {
        f.name: untrusted.text(value) for f in fields(event) if isinstance(value := getattr(event, f.name), str)
    }
    return replace(event, **changes)


def build_bus(audit_config: Any, log: Any = None) -> AuditBus:
    """The log sink always; the JSONL file and the webhook when configured."""
    sinks: list[Sink] = [LogSink(log)]
    if audit_config is None:
        return AuditBus(sinks)
    if audit_config.jsonl_path:
        from gateway.audit.jsonl_sink import JsonlSink

        sinks.append(JsonlSink(audit_config.jsonl_path))
    hook = audit_config.webhook
    if hook is not None:
        from gateway.audit.webhook_sink import WebhookSink

        sinks.append(
            WebhookSink(
                hook.url,
                timeout_s=hook.timeout_s,
                queue_size=hook.queue_size,
                max_retries=hook.max_retries,
                backoff_s=hook.backoff_s,
                headers=dict(hook.headers),
            )
        )
    return AuditBus(sinks)
