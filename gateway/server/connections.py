"""Client connections before a request exists: how long its headers may take, how many may be open.

uvicorn times out neither a connection that sends nothing nor one that sends its headers a byte
at a time (its keep-alive timer is reset by any byte), and accepts connections until the process
runs out of file descriptors, at which point health checks fail too. Its HTTP protocol is
therefore extended here:

- ``limits.header_timeout_s``: from connecting, and from the first byte of each further request
  on a kept-alive connection, the request headers must be complete within this, else the
  connection is answered 408 and closed;
- ``limits.max_connections``: a connection beyond this many open ones is answered 503 at once
  and closed, so the process keeps descriptors for the requests it serves (and its health
  checks).

Bytes of request bodies held at once are bounded in the ASGI entry (``InflightBytes``), where
the body is read.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


@dataclass(slots=True)
class ConnectionLimits:
    header_timeout_s: float = 5.0
    max_connections: int = 1000


# Set once per process, before it serves (``configure``): uvicorn builds the protocol from its
# class, which must stay importable by name for worker processes.
LIMITS = ConnectionLimits()


def configure(header_timeout_s: float, max_connections: int) -> type[HttpToolsProtocol]:
    LIMITS.header_timeout_s = header_timeout_s
    LIMITS.max_connections = max_connections
    return LimitedHttpToolsProtocol


def _plain(status: bytes, text: bytes) -> bytes:
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: "
        + str(len(text)).encode()
        + b"\r\nconnection: close\r\n\r\n"
        + text
    )


TOO_MANY = _plain(b"503 Service Unavailable", b"Too many open connections (limits.max_connections).")
SLOW_HEADERS = _plain(
    b"408 Request Timeout", b"The request headers were not received in time (limits.header_timeout_s)."
)


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    _header_timer: asyncio.TimerHandle | None = None
    _refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > LIMITS.max_connections:
            self._refused = True
            transport.write(TOO_MANY)
            transport.close()
            return
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        if not self._refused:
            super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(LIMITS.header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:  # no request is being answered
            self.transport.write(SLOW_HEADERS)
            self.transport.close()
