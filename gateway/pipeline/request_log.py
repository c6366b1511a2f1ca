"""Where a request's time went (the gateway's own code vs waiting for the upstream), and the
one request log line plus timing metrics written when the exchange is over."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.background import BackgroundTask

from gateway.upstream.errors import UpstreamError
from gateway.web.responses import UPSTREAM_BROKEN, RelayStream

if TYPE_CHECKING:  # the exchange holds a clock: imported for its type only
    from gateway.pipeline.exchange import Exchange


@dataclass(slots=True)
class Clock:
    started: float = field(default_factory=time.perf_counter)
    overhead_s: float = 0.0  # time spent in the gateway's own code
    upstream_s: float = 0.0  # time spent waiting for the upstream, re-asks included

    def took(self, since: float) -> None:
        self.overhead_s += time.perf_counter() - since

    def waited(self, since: float) -> None:
        self.upstream_s += time.perf_counter() - since


class LogWhenSent(BackgroundTask):
    """A response's background (run once its last byte went out): the request line then."""

    def __init__(self, ex: Exchange, status: int) -> None:
        self.ex, self.status = ex, status

    async def __call__(self) -> None:
        log_request(self.ex, self.status)


class LoggedStream(RelayStream):
    """A guarded stream: its request line is written once it is over, however it ended (the
    last byte out, the client gone, the upstream broken off), with ``ending`` saying which."""

    def __init__(
        self,
        ex: Exchange,
        headers: list[tuple[bytes, bytes]],
        chunks: AsyncIterator[bytes],
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(200, headers, chunks, on_close)
        self._ex = ex

    def broken(self, exc: UpstreamError) -> None:
        self._ex.log.warning("upstream_stream_broken", error=type(exc).__name__)

    def over(self, ending: str) -> None:
        log_request(self._ex, 200, ending)


def log_request(ex: Exchange, status: int, ending: str | None = None) -> None:
    """The request line operators count requests by (``ex``: the exchange). A stream's says how
    it ended: the protocol's error event the gateway ended it with, else ``ending``."""
    clock = ex.clock
    ending = ex.ending if ex.ending is not None and ending != UPSTREAM_BROKEN else ending
    extra = {"ending": ending} if ending is not None else {}
    ex.log.info(
        "request",
        method="POST",
        status=status,
        stream=ex.stream,
        action=ex.verdict.action.label,
        upstream_ms=round(clock.upstream_s * 1000, 3),
        overhead_ms=round(clock.overhead_s * 1000, 3),
        **extra,
    )
    ex.gateway.metrics.exchange_done(ex.adapter.name, clock.overhead_s, clock.upstream_s)
