"""POSTs each event as JSON to a webhook, off the request path.

``emit`` only puts the event on a bounded queue (never awaits, never raises); one background
task delivers in order, retrying network errors, 408/429 and 5xx with exponential backoff. A full
queue or an event that exhausted its retries is dropped and counted: an audit receiver that is
down must cost the traffic nothing.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import structlog

from gateway import untrusted
from gateway.audit.events import AuditEvent
from gateway.audit.worker import drain_then_cancel

_RETRIED = frozenset({408, 425, 429})
MAX_BACKOFF_S = 30.0


class WebhookSink:
    name = "webhook"

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 5.0,
        queue_size: int = 1000,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        headers: dict[str, str] | None = None,
        drain_s: float = 2.0,
    ) -> None:
        self.url = url
        self.host = httpx.URL(url).host  # logged instead of the URL: webhook URLs embed tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.headers = {"content-type": "application/json", **(headers or {})}
        self.drain_s = drain_s  # how long shutdown waits for queued events
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=queue_size)
        self.sent = 0
        self.retries = 0
        self.dropped: Counter[str] = Counter()  # reason -> events: queue_full | undeliverable | shutdown
        self._client: httpx.AsyncClient | None = None
        self._task: asyncio.Task[None] | None = None

    def emit(self, event: AuditEvent) -> None:
        try:
            self.queue.put_nowait(untrusted.dumps(event.to_dict()))
        except asyncio.QueueFull:
            self.dropped["queue_full"] += 1

    async def start(self) -> None:
        self._client = httpx.AsyncClient(timeout=self.timeout_s)
        self._task = asyncio.create_task(self._deliver_forever(), name="audit-webhook")

    async def stop(self) -> None:
        if self._task is not None:
            await drain_then_cancel(self._task, self.queue, self.drain_s)
            self._task = None
        self.dropped["shutdown"] += self.queue.qsize()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _deliver_forever(self) -> None:
        while True:
            body = await self.queue.get()
            try:
                await self._deliver(body)
            except asyncio.CancelledError:
                self.dropped["shutdown"] += 1
                raise
            except Exception:
                self.dropped["undeliverable"] += 1
                structlog.get_logger("loopguard").exception("audit.webhook_failed", host=self.host)
            finally:
                self.queue.task_done()

    async def _deliver(self, body: bytes) -> None:
        assert self._client is not None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.retries += 1
                await asyncio.sleep(min(self.backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S))
            problem = await self._post(body)
            if problem is None:
                self.sent += 1
                return
            if problem == "rejected":  # a 4xx other than 408/425/429: retrying cannot help
                break
        self.dropped["undeliverable"] += 1
        structlog.get_logger("loopguard").warning("audit.webhook_dropped", host=self.host, attempts=attempt + 1)

    async def _post(self, body: bytes) -> str | None:
        """None when delivered, else why not: "retry" or "rejected"."""
        assert self._client is not None
        try:
            response = await self._client.post(self.url, content=body, headers=self.headers)
        except httpx.HTTPError:
            return "retry"
        if response.is_success:
            return None
        if response.status_code >= 500 or response.status_code in _RETRIED:
            return "retry"
        return "rejected"

    def stats(self) -> dict[str, Any]:
        return {"sent": self.sent, "retries": self.retries, "dropped": dict(self.dropped), "queued": self.queue.qsize()}
