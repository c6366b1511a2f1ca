"""Counts every HTTP answer by route and status, errors included (a pure ASGI wrapper: one
closure per request, one dict lookup at response start; streamed bodies pass straight through)."""

from __future__ import annotations

from typing import Any

from gateway.metrics.registry import GatewayMetrics, route_of
from gateway.policy.engine import counting_into

__all__ = ["RequestMetrics", "route_of"]  # route_of: imported from here by the lifecycle and tracing


class RequestMetrics:
    def __init__(self, app: Any, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = route_of(scope["path"])
        started = False

        async def counting_send(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                self.metrics.request(route, message["status"])
            await send(message)

        try:
            with counting_into(self.metrics.engine):  # this app's fail-opens are this app's
                await self.app(scope, receive, counting_send)
        except Exception:
            if not started:  # Starlette's error handler answers 500 outside this wrapper
                self.metrics.request(route, 500)
            raise
