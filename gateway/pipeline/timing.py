"""Where a request's time went (the gateway's own code vs waiting for the upstream), and the
one request log line plus timing metrics written when the exchange is over."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(slots=True)
class Clock:
    started: float = field(default_factory=time.perf_counter)
    overhead_s: float = 0.0  # time spent in the gateway's own code
    upstream_s: float = 0.0  # time spent waiting for the upstream, re-asks included

    def took(self, since: float) -> None:
        self.overhead_s += time.perf_counter() - since

    def waited(self, since: float) -> None:
        self.upstream_s += time.perf_counter() - since


class LogWhenSent:
    """A response's background (run once its last byte went out): the request line then."""

    __slots__ = ("ex", "status")

    def __init__(self, ex, status: int) -> None:
        self.ex, self.status = ex, status

    async def __call__(self) -> None:
        log_request(self.ex, self.status)


def log_request(ex, status: int) -> None:
    """The request line operators count requests by (``ex``: the exchange)."""
    clock = ex.clock
    extra = {"ending": ex.ending} if ex.ending is not None else {}
    ex.log.info("request", method="POST", status=status, stream=ex.stream, action=ex.verdict.action.label,
                upstream_ms=round(clock.upstream_s * 1000, 3), overhead_ms=round(clock.overhead_s * 1000, 3),
                **extra)
    ex.gateway.metrics.exchange_done(ex.adapter.name, clock.overhead_s, clock.upstream_s)
