"""Answers the gateway gives before any route runs, in the protocol's error shape.

A client only parses errors shaped the way its own API shapes them (each protocol's
``Authored.error_body``). Which one a request expects is known from its path alone (the protocol that
declares it, ``gateway.protocols.registry``; the default upstream's for any other), so a refusal
needs nothing else.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import orjson
import structlog

from gateway.protocols.errors import error_headers
from gateway.protocols.registry import DEFAULT, protocol_of
from gateway.protocols.roles import Kind

_log = structlog.get_logger("loopguard")


def protocol_at(path: str) -> Kind:
    """The protocol whose errors a request on ``path`` expects."""
    return protocol_of(path) or DEFAULT


def error_json(path: str, message: str, type: str, code: str | None = None) -> bytes:
    return orjson.dumps(protocol_at(path).authored.error_body(message, type, code))


def _error(path: str, message: str, type: str, code: str) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    """The error's body and the headers its protocol sends with one (``error_headers``)."""
    body = protocol_at(path).authored.error_body(message, type, code)
    return orjson.dumps(body), error_headers(body)


@dataclass(frozen=True, slots=True)
class Refusal:
    """What a request gate answers instead of letting the request on (``server/front.py``)."""

    status: int
    message: str
    type: str
    code: str
    headers: tuple[tuple[bytes, bytes], ...] = ()

    async def send(self, scope: dict[str, Any], send: Any, started: float) -> None:
        await refuse(
            scope,
            send,
            self.status,
            self.message,
            type=self.type,
            code=self.code,
            started=started,
            headers=self.headers,
        )


async def refuse(
    scope: dict[str, Any],
    send: Any,
    status: int,
    message: str,
    *,
    type: str,
    code: str,
    started: float | None = None,
    headers: tuple[tuple[bytes, bytes], ...] | list[tuple[bytes, bytes]] = (),
) -> None:
    """Send the error and log the request line (the path is cut short: it is the client's text)."""
    path = scope.get("path", "")
    body, named = _error(path, message, type, code)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *named,
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
    elapsed = 0.0 if started is None else round((time.perf_counter() - started) * 1000, 3)
    _log.info(
        "request",
        method=scope.get("method"),
        path=path[:200],
        status=status,
        stream=False,
        action="pass",
        refused=code,
        upstream_ms=0.0,
        overhead_ms=elapsed,
    )
