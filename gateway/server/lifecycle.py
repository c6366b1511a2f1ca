"""A request's life around its route: slow bodies, clients that leave early, what was answered.

- A body not complete within ``limits.body_timeout_s`` of the request's start is answered 408
  and the connection closed: otherwise slow senders (slowloris) hold connections and memory
  for as long as they like. Its bytes count against ``limits.max_inflight_bytes`` until the
  request is over (``gateway.server.inflight``).
- Once the body is in, the flow alone reads the connection's events. A client that
  disconnects before its answer is complete cancels the handler: a non-streaming answer nobody
  will read must not keep the model generating, and a stream stops relaying (the response
  closes the upstream on its way out). This is the one disconnect watcher per request. It
  starts ``WATCH_AFTER_S`` after the body is in (or when the route itself waits for a
  disconnect): a request answered sooner, as most non-model routes and every refusal are,
  never pays for a task, and a model's answer takes far longer than that.
- A disconnect before the response started is logged as such (status 499, no traceback) and
  counted, not turned into a 500.
- Every answer is counted by route and status when it starts, refusals and errors included.

Plain asyncio, not anyio: this runs for every request, and anyio's cancel scopes cost several
times more per request (one even formats the task's repr when it cancels).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from gateway.metrics.registry import GatewayMetrics
from gateway.server.inflight import InflightBytes, Overloaded
from gateway.web.body import BodyTimeout

_DISCONNECT = {"type": "http.disconnect"}
# A client that leaves is noticed at most this late; the upstream call it started is cancelled then.
WATCH_AFTER_S = 0.05
_log = structlog.get_logger("loopguard")


class Flow:
    """One request's connection events: the body under a deadline, then disconnects; and the
    answer as it goes out (``send``)."""

    __slots__ = (
        "_deadline",
        "_inflight",
        "_metrics",
        "_receive",
        "_send",
        "_task",
        "_timer",
        "_watcher",
        "cancelled",
        "finished",
        "gone",
        "held",
        "received",
        "responded",
        "route",
        "started",
    )

    def __init__(
        self,
        receive: Any,
        send: Any,
        deadline: float,
        metrics: GatewayMetrics,
        route: str,
        inflight: InflightBytes,
        held: int = 0,
    ) -> None:
        self._receive, self._send = receive, send
        self._deadline = deadline  # on the event loop's clock
        task = asyncio.current_task()
        assert task is not None
        self._task = task  # the request's handler: cancelled when its client leaves
        self._watcher: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None  # starts the watcher
        self._metrics = metrics
        self._inflight = inflight
        self.held = held  # body bytes this request counts in ``inflight`` (reserved, then received)
        self.received = 0
        self.route = route  # the metrics label of the path as the client sent it
        self.started = time.perf_counter()
        self.gone = asyncio.Event()
        self.responded = False  # the response has started
        self.finished = False  # its last byte was handed to the server
        self.cancelled = False  # this flow cancelled the handler

    async def receive(self) -> dict[str, Any]:
        if self._timer is not None:  # the body is in: the watcher reads the connection from here on
            self._watch_now()
            await self.gone.wait()
            return _DISCONNECT
        try:
            async with asyncio.timeout_at(self._deadline):
                message: dict[str, Any] = await self._receive()
        except TimeoutError:
            raise BodyTimeout from None
        if message["type"] == "http.disconnect":
            self.gone.set()
            return message
        self.received += len(message.get("body", b""))
        if self.received > self.held:  # beyond what the content-length reserved (chunked bodies)
            if not self._inflight.take(self.received - self.held):
                raise Overloaded
            self.held = self.received
        if not message.get("more_body", False):
            self._timer = asyncio.get_running_loop().call_later(WATCH_AFTER_S, self._watch_now)
        return message

    def _watch_now(self) -> None:
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.gone.set()
        if not self.finished:
            self.cancelled = True
            self._task.cancel()

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.responded = True
            self._metrics.request(self.route, message["status"])
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.finished = True
        await self._send(message)

    async def settle(self) -> None:
        """The handler returned. Take a cancel this flow requested that the handler never saw,
        so it cannot hit the server's own code afterwards."""
        if not self.cancelled:
            return
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            pass
        self._task.uncancel()

    def was_cancelled(self) -> bool:
        """A CancelledError came from this flow alone (the client left), not from the server
        stopping the task."""
        return self.cancelled and self._task.uncancel() == 0

    def close(self, scope: dict[str, Any]) -> None:
        self._inflight.give(self.held)
        self.held = 0
        if self._timer is not None:
            self._timer.cancel()
        if self._watcher is not None:
            self._watcher.cancel()
        if self.gone.is_set() and not self.responded:
            self._metrics.request(self.route, 499)
            _log.info(
                "request",
                method=scope.get("method"),
                path=scope["path"][:200],
                status=499,
                stream=False,
                action="pass",
                disconnected=True,
                upstream_ms=0.0,
                overhead_ms=round((time.perf_counter() - self.started) * 1000, 3),
            )
