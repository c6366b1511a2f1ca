"""The gateway's ASGI entry: request gates in a plain loop, then the route.

Every request passes the gates in order (canonical path and headers, then the client's key);
a gate returns the scope the rest of the gateway sees, or a ``Refusal`` that is answered at
once. The guarded protocols are then found by exact path and method in one dict; everything
else (health, metrics, the relayed /v1/* routes) goes to a Starlette app, which also runs the
lifespan.

Why gates and not a stack of ASGI middlewares: each middleware is one more coroutine frame that
every resumption of the request's task passes through, and one more send wrapper that every
streamed write passes through. A streamed answer resumes its task once per upstream read, so
on the guarded routes those layers cost more than the guard itself. Here a request has one
frame above its handler and one send wrapper (``Flow.send``: disconnect tracking and the
request counter).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from starlette.requests import ClientDisconnect

from gateway.metrics.registry import GatewayMetrics, route_of
from gateway.policy.engine import counting_into
from gateway.server.inflight import InflightBytes, Overloaded, declared_length
from gateway.server.lifecycle import Flow
from gateway.server.refusal import Refusal, refuse
from gateway.web.body import BodyTimeout

ASGIApp = Callable[..., Any]
# Reads the request scope; returns the scope to go on with, or the refusal to answer.
Gate = Callable[[dict[str, Any]], "dict[str, Any] | Refusal"]


class Front:
    def __init__(
        self,
        guarded: dict[str, ASGIApp],
        fallback: Any,
        gates: tuple[Gate, ...],
        metrics: GatewayMetrics,
        body_timeout_s: float,
        max_inflight_bytes: int = 256 * 1024 * 1024,
        patterns: tuple[tuple[re.Pattern[str], ASGIApp], ...] = (),
    ) -> None:
        self.guarded = guarded  # exact path -> the protocol's app, POST only
        self.patterns = patterns  # then path patterns (a model named in the path), POST only
        self.fallback = fallback
        self.gates = gates
        self.metrics = metrics
        self.body_timeout_s = body_timeout_s
        self.inflight = metrics.inflight = InflightBytes(max_inflight_bytes)  # /metrics reads it
        self.started = 0  # guarded requests begun (scrapes and probes are not traffic): server/idle.py

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.fallback(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.body_timeout_s
        declared = declared_length(scope["headers"])
        if declared > self.inflight.limit:  # beyond the whole budget: the route answers 413
            declared = 0
        overloaded = not self.inflight.take(declared)
        flow = Flow(
            receive, send, deadline, self.metrics, route_of(scope["path"]), self.inflight, 0 if overloaded else declared
        )
        try:
            if overloaded:
                raise Overloaded
            for gate in self.gates:
                checked = gate(scope)
                if isinstance(checked, Refusal):
                    await checked.send(scope, flow.send, flow.started)
                    return
                scope = checked
            app = self.guarded.get(scope["path"]) if scope["method"] == "POST" else None
            if app is None and self.patterns and scope["method"] == "POST":
                app = next((a for regex, a in self.patterns if regex.match(scope["path"])), None)
            if app is not None:
                self.started += 1
            with counting_into(self.metrics.engine):  # this app's fail-opens are this app's
                await (app or self.fallback)(scope, flow.receive, flow.send)
            await flow.settle()  # the client left as the handler returned: the cancel is pending
        except asyncio.CancelledError:
            if not flow.was_cancelled():
                raise  # not (only) the client leaving: the server is stopping the task
        except BodyTimeout:
            if not flow.responded:
                await refuse(
                    scope,
                    flow.send,
                    408,
                    f"The request body was not received within {self.body_timeout_s:g} s.",
                    type="invalid_request_error",
                    code="request_timeout",
                    started=flow.started,
                    headers=[(b"connection", b"close")],
                )
        except Overloaded:
            if not flow.responded:
                await refuse(
                    scope,
                    flow.send,
                    503,
                    "The gateway holds too many request bodies at once (limits.max_inflight_bytes); retry shortly.",
                    type="server_error",
                    code="overloaded",
                    started=flow.started,
                    headers=[(b"retry-after", b"1"), (b"connection", b"close")],
                )
        except ClientDisconnect:
            flow.gone.set()  # left while sending its body
        except Exception:
            if not flow.responded:  # the server answers 500 (and logs the traceback)
                self.metrics.request(flow.route, 500)
            raise
        finally:
            flow.close(scope)
