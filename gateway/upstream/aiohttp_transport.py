"""The default upstream: any OpenAI-compatible base URL over one pooled aiohttp client session.

aiohttp's C parser and connection pool make the hop several times cheaper than httpx (see
benchmarks/overhead.py). What keeps it a faithful relay, not a browser:
- bytes are relayed as they came: no decompression, no Accept/Accept-Encoding/User-Agent/
  Content-Type added that the client did not send, no cookie jar shared between clients,
  no redirects followed, no proxy taken from the environment;
- a response abandoned before its end closes its connection instead of returning it to the pool;
- the URL goes as written (``url_of``: the canonical path the gateway routed, escapes and all),
  never decoded or re-encoded on the way: the upstream then routes the path that was judged,
  and a request signature covers the bytes sent.

Timeouts (``gateway.upstream.deadlines``): the response headers within ``upstream.timeout_s``; a
JSON body read whole by the same deadline; a stream's chunks each within the idle timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
from yarl import URL

from gateway.config import UpstreamConfig
from gateway.upstream.base import UpstreamRequest, url_of
from gateway.upstream.deadlines import Timing
from gateway.upstream.errors import UpstreamConnectError, UpstreamError, UpstreamTimeout
from gateway.upstream.headers import strip_hop_by_hop

# Headers aiohttp would add on its own; the upstream must see the client's choice (or nothing).
_NOT_ADDED = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")
# Providers send long cookies and trace headers; aiohttp's 8 KB default would turn them into 502s.
_MAX_FIELD = 64 * 1024


def _translate(exc: BaseException, default: str) -> UpstreamError:
    if isinstance(exc, TimeoutError):  # aiohttp's ServerTimeoutError is one too
        return UpstreamTimeout(str(exc) or default + " timeout")
    return UpstreamConnectError(str(exc) or type(exc).__name__)


class AiohttpResponse:
    __slots__ = ("_deadline", "_done", "_idle", "_response", "headers", "status")

    def __init__(self, response: aiohttp.ClientResponse, deadline: float, idle: float) -> None:
        self._response = response
        self._done = False
        self._deadline = deadline  # the whole response, on the loop's clock (aread)
        self._idle = idle  # the longest wait for a stream's next chunk (aiter_raw)
        self.status = response.status
        self.headers = strip_hop_by_hop(response.raw_headers)

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        # ``readany`` in a loop, not aiohttp's ``iter_any``: one async generator fewer for every
        # chunk of a stream to pass through.
        content = self._response.content
        idle = self._idle
        try:
            while True:
                # What is already buffered is taken without a timer: only a wait can be too long.
                chunk = content.read_nowait()
                if not chunk and not content.is_eof():
                    async with asyncio.timeout(idle):
                        chunk = await content.readany()
                if not chunk:
                    break
                yield chunk
            self._done = True
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _translate(exc, "upstream read") from exc

    async def aread(self) -> bytes:
        try:
            if self._response.content.is_eof():  # all in already: nothing to wait for, no timer
                body = await self._response.read()
            else:
                async with asyncio.timeout_at(self._deadline):
                    body = await self._response.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _translate(exc, "upstream read") from exc
        self._done = True
        return body

    async def aclose(self) -> None:
        if self._done:
            self._response.release()  # the connection goes back to the pool
        else:
            self._response.close()  # unread rest: the connection cannot be reused


class AiohttpUpstream:
    def __init__(self, config: UpstreamConfig) -> None:
        self._base = config.base_url.rstrip("/") + "/"
        self._config = config
        self._timing = Timing.of(config)
        self._session: aiohttp.ClientSession | None = None  # made in the serving event loop

    def _open(self) -> aiohttp.ClientSession:
        config = self._config
        # One session for the process: keep-alive pooling is most of a proxy hop's cost.
        # ``connect`` bounds waiting for a pooled connection too, as httpx's pool timeout did.
        # Reads are bounded here, per response (``Timing``), not per socket read.
        timeout = aiohttp.ClientTimeout(
            total=None, connect=config.timeout_s, sock_connect=config.connect_timeout_s, sock_read=None
        )
        connector = aiohttp.TCPConnector(limit=config.max_connections, limit_per_host=0)
        return aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            auto_decompress=False,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=_NOT_ADDED,
            max_line_size=_MAX_FIELD,
            max_field_size=_MAX_FIELD,
        )

    async def send(self, request: UpstreamRequest) -> AiohttpResponse:
        session = self._session or self._use(self._open())
        url = url_of(self._base, request)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers]
        deadline = self._timing.deadline()
        try:
            async with asyncio.timeout_at(deadline):
                response = await session.request(
                    request.method,
                    URL(url, encoded=True),  # as written: yarl would decode an escape (%63 -> c)
                    headers=headers,
                    data=request.body or None,
                    allow_redirects=False,
                )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _translate(exc, "upstream") from exc
        return AiohttpResponse(response, deadline, self._timing.idle_s)

    def _use(self, session: aiohttp.ClientSession) -> aiohttp.ClientSession:
        self._session = session
        return session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


__all__ = ["AiohttpResponse", "AiohttpUpstream", "UpstreamError"]
