"""Responses the server sends: errors in the route's protocol shape, relayed bodies,
disconnect-aware streams."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.protocols.errors import error_body, error_headers
from gateway.upstream.errors import UpstreamError

_JSON = (b"content-type", b"application/json")


# An error body in a route's protocol: (message, type, code) -> body (``Authored.error_body``).
Shape = Callable[[str, str, "str | None"], dict[str, Any]]


def openai_shape(message: str, type: str, code: str | None = None) -> dict[str, Any]:
    return error_body(message, type, code=code)


def error_response(
    status: int, message: str, type: str = "invalid_request_error", code: str | None = None, shape: Shape = openai_shape
) -> Response:
    body = shape(message, type, code)
    return relay(status, [_JSON, *error_headers(body)], orjson.dumps(body))


def relay(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> Response:
    """A response with exactly these raw headers (duplicates kept) and a fresh content-length."""
    response = Response(status_code=status)
    response.body = body
    response.raw_headers = [(k, v) for k, v in headers if k != b"content-length"]
    response.raw_headers.append((b"content-length", str(len(body)).encode()))
    return response


async def uncommented(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks`` without the ones that are SSE comments (the gateway writes each on its own),
    for a protocol whose clients cannot skip them (``Declaration.stream_notes``)."""
    try:
        async for chunk in chunks:
            if not chunk.startswith(b":"):
                yield chunk
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


# How a relayed stream ended, as the ``request`` log line's ``ending`` says it.
COMPLETED = "completed"  # its last byte went out
CLIENT_CLOSED = "client_closed"  # the client left first (after the terminal event, or before)
UPSTREAM_BROKEN = "upstream_broken"  # the upstream broke off; the client's is left unfinished


class RelayStream(Response):
    """Streams chunks as they come; however it ends, closes the producer and then ``on_close``.

    A client that disconnects mid-stream cancels this response (``server/lifecycle.py`` watches
    every request's connection): Starlette's StreamingResponse would only notice a gone client
    when a write fails, which for a model slow to produce its next token may be minutes of
    wasted upstream generation.
    """

    def __init__(
        self,
        status: int,
        headers: list[tuple[bytes, bytes]],
        chunks: AsyncIterator[bytes],
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.status_code = status
        self.raw_headers = [(k, v) for k, v in headers if k != b"content-length"]
        self.background = None
        self._chunks = chunks
        self._on_close = on_close

    async def aread(self) -> bytes:
        """The whole body, read here instead of sent (a small answer the gateway must read)."""
        try:
            return b"".join([chunk async for chunk in self._chunks])
        finally:
            await self._close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Until the last byte is out, the client may leave: its disconnect cancels this task
        # (a client that hangs up right after the protocol's terminal event, as Codex does,
        # lands here while the upstream's last read is pending), and a write may fail.
        ending = CLIENT_CLOSED
        try:
            ending = await self._stream(send)
        except OSError:
            pass  # the client went away mid-write: nothing left to tell it
        finally:
            try:
                await self._close()
            finally:
                self.over(ending)

    async def _stream(self, send: Send) -> str:
        """How the stream ended: ``COMPLETED`` (whole) or ``UPSTREAM_BROKEN``."""
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async for chunk in self._chunks:
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except UpstreamError as exc:
            # The upstream's body broke off: leave ours unfinished so the server drops the
            # connection and the client sees a broken stream, as it would without the gateway.
            # Ending it cleanly would pass a truncated answer (half a tool call) off as complete.
            self.broken(exc)
            return UPSTREAM_BROKEN
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return COMPLETED

    def broken(self, exc: UpstreamError) -> None:
        """Hook: the upstream's body broke off mid-stream (the client's is left unfinished)."""

    def over(self, ending: str) -> None:
        """Hook: the stream is over, however it ended (``COMPLETED``, ``CLIENT_CLOSED``,
        ``UPSTREAM_BROKEN``), and the upstream is closed. Runs on a cancelled task too, so it
        must not await. (A method, not a callback attribute: a bound method stored on the
        response would make a reference cycle that keeps every request's objects alive until
        the collector runs.)"""

    async def _close(self) -> None:
        # Runs once the request is cancelled too: asyncio delivers a cancel once, so these
        # awaits complete (the producer's own ``finally`` may still await the upstream).
        try:
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            if self._on_close is not None:
                await self._on_close()
