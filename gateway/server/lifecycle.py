"""A request's life beyond its handler: slow bodies, and clients that leave before the answer.

- A body not complete within ``limits.body_timeout_s`` of the request's start is answered 408
  and the connection closed: otherwise slow senders (slowloris) hold connections and memory
  for as long as they like.
- Once the body is in, this middleware alone reads the connection's events. A client that
  disconnects before the response started cancels the handler, and with it the upstream
  request: a non-streaming answer nobody will read must not keep the model generating. Streams
  started already learn of it through ``receive`` as before (``RelayStream`` stops itself).
- A disconnect is logged as such (status 499, no traceback) and counted, not turned into a 500.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
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

    def __init__(self, receive: Any, deadline: float) -> None:
        self._receive = receive
        self._deadline = deadline
        self.body_done = asyncio.Event()
        self.gone = asyncio.Event()
        self.responded = False  # the response has started

    async def receive(self) -> dict:
        if self.body_done.is_set():
            await self.gone.wait()  # the watcher reads the connection from here on
            return _DISCONNECT
        try:
            with anyio.fail_after(max(self._deadline - time.monotonic(), 0)):
                message = await self._receive()
        except TimeoutError:
            raise BodyTimeout from None
        if message["type"] == "http.disconnect":
            self.gone.set()
        elif not message.get("more_body", False):
            self.body_done.set()
        return message

    async def watch(self, cancel: anyio.CancelScope) -> None:
        await self.body_done.wait()
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.gone.set()
        if not self.responded:
            cancel.cancel()


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
        flow = _Flow(receive, time.monotonic() + self.body_timeout_s)

        async def tracking_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                flow.responded = True
            await send(message)

        with anyio.CancelScope() as cancel:
            watcher = asyncio.ensure_future(flow.watch(cancel))
            try:
                await self.app(scope, flow.receive, tracking_send)
            except BodyTimeout:
                if not flow.responded:
                    await refuse(scope, send, 408, f"The request body was not received within "
                                 f"{self.body_timeout_s:g} s.", type="invalid_request_error",
                                 code="request_timeout", started=started, headers=[(b"connection", b"close")])
            except ClientDisconnect:
                flow.gone.set()  # left while sending its body
            finally:
                watcher.cancel()
        if flow.gone.is_set() and (cancel.cancel_called or not flow.responded):
            self._gone(scope, started)

    def _gone(self, scope: dict, started: float) -> None:
        self.metrics.request(route_of(scope["path"]), 499)
        _log.info("request", method=scope.get("method"), path=scope["path"][:200], status=499,
                  stream=False, action="pass", disconnected=True, upstream_ms=0.0,
                  overhead_ms=round((time.perf_counter() - started) * 1000, 3))
