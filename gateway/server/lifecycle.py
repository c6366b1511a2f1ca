"""A request's life beyond its handler: slow bodies, and clients that leave before the end.

- A body not complete within ``limits.body_timeout_s`` of the request's start is answered 408
  and the connection closed: otherwise slow senders (slowloris) hold connections and memory
  for as long as they like.
- Once the body is in, this middleware alone reads the connection's events. A client that
  disconnects before its answer is complete cancels the handler: a non-streaming answer nobody
  will read must not keep the model generating, and a stream stops relaying (``RelayStream``
  closes the upstream on its way out). This is the one disconnect watcher per request.
- A disconnect before the response started is logged as such (status 499, no traceback) and
  counted, not turned into a 500.

Plain asyncio, not anyio: this runs for every request, and anyio's cancel scopes cost several
times more per request (one even formats the task's repr when it cancels).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog
from starlette.requests import ClientDisconnect

from gateway.metrics.middleware import route_of
from gateway.metrics.registry import GatewayMetrics
from gateway.server.body import BodyTimeout
from gateway.server.refusal import refuse

_DISCONNECT = {"type": "http.disconnect"}
_log = structlog.get_logger("loopguard")


class _Flow:
    """The connection's events for one request: the body under a deadline, then disconnects."""

    __slots__ = ("_receive", "_deadline", "_task", "_watcher", "gone", "responded", "finished", "cancelled")

    def __init__(self, receive: Any, deadline: float, task: asyncio.Task) -> None:
        self._receive = receive
        self._deadline = deadline  # on the event loop's clock
        self._task = task  # the request's handler: cancelled when its client leaves
        self._watcher: asyncio.Task | None = None
        self.gone = asyncio.Event()
        self.responded = False  # the response has started
        self.finished = False  # its last byte was handed to the server
        self.cancelled = False  # this flow cancelled the handler

    async def receive(self) -> dict:
        if self._watcher is not None:
            await self.gone.wait()  # the watcher reads the connection from here on
            return _DISCONNECT
        try:
            async with asyncio.timeout_at(self._deadline):
                message = await self._receive()
        except TimeoutError:
            raise BodyTimeout from None
        if message["type"] == "http.disconnect":
            self.gone.set()
        elif not message.get("more_body", False):
            self._watcher = asyncio.ensure_future(self._watch())
        return message

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.gone.set()
        if not self.finished:
            self.cancelled = True
            self._task.cancel()

    def sent(self, message: dict) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.responded = True
        elif kind == "http.response.body" and not message.get("more_body", False):
            self.finished = True

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()


async def _absorb(task: asyncio.Task) -> None:
    """Take a cancel this middleware requested that the handler never saw, so it cannot hit the
    server's own code after the handler returned."""
    try:
        await asyncio.sleep(0)
    except asyncio.CancelledError:
        pass
    task.uncancel()


class Lifecycle:
    def __init__(self, app: Any, body_timeout_s: float, metrics: GatewayMetrics) -> None:
        self.app = app
        self.body_timeout_s = body_timeout_s
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        task = asyncio.current_task()
        assert task is not None
        flow = _Flow(receive, asyncio.get_running_loop().time() + self.body_timeout_s, task)

        async def tracking_send(message: dict) -> None:
            flow.sent(message)
            await send(message)

        try:
            await self.app(scope, flow.receive, tracking_send)
            if flow.cancelled:  # the client left as the handler returned: the cancel is pending
                await _absorb(task)
        except asyncio.CancelledError:
            if not (flow.cancelled and task.uncancel() == 0):
                raise  # not (only) the client leaving: the server is stopping the task
        except BodyTimeout:
            if not flow.responded:
                await refuse(scope, send, 408, f"The request body was not received within "
                             f"{self.body_timeout_s:g} s.", type="invalid_request_error",
                             code="request_timeout", started=started, headers=[(b"connection", b"close")])
        except ClientDisconnect:
            flow.gone.set()  # left while sending its body
        finally:
            flow.close()
        if flow.gone.is_set() and not flow.responded:
            self._gone(scope, started)

    def _gone(self, scope: dict, started: float) -> None:
        self.metrics.request(route_of(scope["path"]), 499)
        _log.info("request", method=scope.get("method"), path=scope["path"][:200], status=499,
                  stream=False, action="pass", disconnected=True, upstream_ms=0.0,
                  overhead_ms=round((time.perf_counter() - started) * 1000, 3))
