"""The upstream of a provider whose base URL nobody set and that has no default.

Some providers have no one address: every Azure OpenAI resource has its own host. Until the
operator names it, the gateway cannot serve the protocol, yet must still start (most gateways
never see such traffic): each request is answered at once with the error naming the missing
setting, in the protocol's shape, instead of a connection attempt to nowhere.
"""

from __future__ import annotations

from typing import NoReturn

from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamError


class UpstreamUnset(UpstreamError):
    """No base URL: 501 Not Implemented (this gateway does not serve the route yet)."""

    status = 501
    code = "upstream_not_configured"
    shown = True  # names the missing setting, nothing secret: the client can tell the operator


class Unset:
    """An ``Upstream`` that sends nothing: ``setting`` names the key that would give it an address."""

    def __init__(self, setting: str) -> None:
        self.setting = setting

    async def send(self, request: UpstreamRequest) -> NoReturn:
        raise UpstreamUnset(f"{self.setting} is not set")

    async def aclose(self) -> None:
        return None
