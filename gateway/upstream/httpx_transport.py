"""The default upstream: any OpenAI-compatible base URL over one pooled httpx client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from gateway.config import UpstreamConfig
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamConnectError, UpstreamError, UpstreamTimeout
from gateway.upstream.headers import strip_hop_by_hop


class HttpxResponse:
    __slots__ = ("_response", "status", "headers")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.headers = strip_hop_by_hop(response.headers.raw)

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(str(exc) or "upstream read timeout") from exc
        except httpx.HTTPError as exc:
            raise UpstreamConnectError(str(exc) or type(exc).__name__) from exc

    async def aread(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_raw()])

    async def aclose(self) -> None:
        await self._response.aclose()


def _no_cookies() -> CookieJar:
    """A jar that keeps nothing: one client's Set-Cookie must not reach another's requests."""
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


class HttpxUpstream:
    def __init__(self, config: UpstreamConfig) -> None:
        self._base = config.base_url.rstrip("/") + "/"
        timeout = httpx.Timeout(config.timeout_s, connect=config.connect_timeout_s)
        limits = httpx.Limits(
            max_connections=config.max_connections,
            max_keepalive_connections=config.max_connections,
        )
        # One client for the process: keep-alive pooling is most of a proxy hop's cost.
        # No cookie jar shared between clients, no headers the client did not send (httpx would
        # add Accept-Encoding, and the raw relayed body would then be compressed unasked).
        self._client = httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False, cookies=_no_cookies())
        for name in ("accept", "accept-encoding", "user-agent"):
            del self._client.headers[name]

    async def send(self, request: UpstreamRequest) -> HttpxResponse:
        url = self._base + request.path.lstrip("/")
        if request.query:
            url += "?" + request.query.decode("latin-1")
        built = self._client.build_request(
            request.method, url, headers=request.headers, content=request.body
        )
        try:
            response = await self._client.send(built, stream=True)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(str(exc) or "upstream timeout") from exc
        except (httpx.HTTPError, OSError) as exc:
            raise UpstreamConnectError(str(exc) or type(exc).__name__) from exc
        return HttpxResponse(response)

    async def aclose(self) -> None:
        await self._client.aclose()


__all__ = ["HttpxUpstream", "HttpxResponse", "UpstreamError"]
