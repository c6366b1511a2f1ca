"""The audit bus's sink for the console: each event, with its run's timeline, into the state store.

``emit`` runs on the request path, so it only puts the event on a bounded queue (a full queue
drops the event and counts it: the console may miss one, traffic never waits). One task builds
the entry and its timeline (``capture``) and appends them to the store, where every replica's
console reads them (Redis) or this process's does (memory).
"""

from __future__ import annotations

import asyncio

import structlog

from gateway.audit.events import AuditEvent, InterventionEvent, SavingsEvent
from gateway.audit.worker import drain_then_cancel
from gateway.console import capture
from gateway.state.base import StateStore


class ConsoleSink:
    name = "console"

    def __init__(
        self, store: StateStore, *, keep: int, max_run_bytes: int, queue_size: int = 1000, drain_s: float = 2.0
    ) -> None:
        self.store, self.keep, self.max_run_bytes, self.drain_s = store, keep, max_run_bytes, drain_s
        self.queue: asyncio.Queue[InterventionEvent | SavingsEvent] = asyncio.Queue(maxsize=queue_size)
        self.written = 0
        self.dropped = 0
        self._task: asyncio.Task[None] | None = None

    def emit(self, event: AuditEvent) -> None:
        if not isinstance(event, (InterventionEvent, SavingsEvent)):
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    async def start(self) -> None:
        self._task = asyncio.create_task(self._write_forever(), name="console-events")

    async def stop(self) -> None:
        if self._task is not None:
            await drain_then_cancel(self._task, self.queue, self.drain_s)
            self._task = None

    async def _write_forever(self) -> None:
        while True:
            event = await self.queue.get()
            try:
                await self._write(event)
            except Exception as exc:
                self.dropped += 1
                structlog.get_logger("loopguard").warning("console.event_failed", error=type(exc).__name__)
            finally:
                self.queue.task_done()

    async def _write(self, event: InterventionEvent | SavingsEvent) -> None:
        detail = capture.detail(event, self.max_run_bytes) if isinstance(event, InterventionEvent) else None
        await self.store.add_event(capture.entry(event), detail, self.keep)
        self.written += 1
