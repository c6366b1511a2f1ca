"""The default upstream: any OpenAI-compatible base URL over one pooled httpx client."""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import AsyncIterator
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from gateway.config import UpstreamConfig
from gateway.upstream.base import UpstreamRequest, url_of
from gateway.upstream.deadlines import Timing
from gateway.upstream.errors import UpstreamConnectError, UpstreamError, UpstreamTimeout
from gateway.upstream.headers import strip_hop_by_hop


class HttpxResponse:
    __slots__ = ("_deadline", "_idle", "_response", "headers", "status")

    def __init__(self, response: httpx.Response, deadline: float, idle: float) -> None:
        self._response = response
        self._deadline = deadline
        self._idle = idle
        self.status = response.status_code
        self.headers = strip_hop_by_hop(response.headers.raw)

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        chunks = self._response.aiter_raw().__aiter__()
        try:
            while True:
                async with asyncio.timeout(self._idle):
                    try:
                        chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        return
                yield chunk
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise UpstreamTimeout(str(exc) or "upstream read timeout") from exc
        except httpx.HTTPError as exc:
            raise UpstreamConnectError(str(exc) or type(exc).__name__) from exc

    async def aread(self) -> bytes:
        try:
            async with asyncio.timeout_at(self._deadline):
                return b"".join([chunk async for chunk in self._response.aiter_raw()])
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise UpstreamTimeout(str(exc) or "upstream read timeout") from exc
        except httpx.HTTPError as exc:
            raise UpstreamConnectError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        await self._response.aclose()


def _no_cookies() -> CookieJar:
    """A jar that keeps nothing: one client's Set-Cookie must not reach another's requests."""
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every httpx upstream of the process, as aiohttp keeps one: building
    one parses the whole CA bundle (~40 ms of CPU), and a gateway builds an upstream per
    provider, again on each reload of its configuration."""
    return httpx.create_ssl_context(trust_env=False)


class HttpxUpstream:
    def __init__(self, config: UpstreamConfig) -> None:
        self._base = config.base_url.rstrip("/") + "/"
        # Reads are bounded per response (``Timing``), not per socket read.
        timeout = httpx.Timeout(None, connect=config.connect_timeout_s, pool=config.timeout_s)
        self._timing = Timing.of(config)
        limits = httpx.Limits(
            max_connections=config.max_connections,
            max_keepalive_connections=config.max_connections,
        )
        # One client for the process: keep-alive pooling is most of a proxy hop's cost.
        # No cookie jar shared between clients, no headers the client did not send (httpx would
        # add Accept-Encoding, and the raw relayed body would then be compressed unasked).
        self._client = httpx.AsyncClient(
            timeout=timeout, limits=limits, verify=_tls(), trust_env=False, cookies=_no_cookies()
        )
        for name in ("accept", "accept-encoding", "user-agent"):
            del self._client.headers[name]

    async def send(self, request: UpstreamRequest) -> HttpxResponse:
        url = url_of(self._base, request)
        built = self._client.build_request(request.method, url, headers=request.headers, content=request.body)
        deadline = self._timing.deadline()
        try:
            async with asyncio.timeout_at(deadline):
                response = await self._client.send(built, stream=True)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise UpstreamTimeout(str(exc) or "upstream timeout") from exc
        except (httpx.HTTPError, OSError) as exc:
            raise UpstreamConnectError(str(exc) or type(exc).__name__) from exc
        return HttpxResponse(response, deadline, self._timing.idle_s)

    async def aclose(self) -> None:
        await self._client.aclose()


__all__ = ["HttpxResponse", "HttpxUpstream", "UpstreamError"]
