"""The transport named by ``upstream.transport``; the other client library is never imported."""

from __future__ import annotations

from gateway.config import UpstreamConfig
from gateway.upstream.base import Upstream


def build_upstream(config: UpstreamConfig) -> Upstream:
    if config.transport == "httpx":
        from gateway.upstream.httpx_transport import HttpxUpstream

        return HttpxUpstream(config)
    from gateway.upstream.aiohttp_transport import AiohttpUpstream

    return AiohttpUpstream(config)
