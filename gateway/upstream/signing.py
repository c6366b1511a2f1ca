"""Requests a provider authenticates by their bytes: a cloud's request signature (AWS SigV4) or
a short-lived token the gateway fetches (Google OAuth). The protocol declares how
(``UpstreamSpec.signer``); ``SignedUpstream`` runs every request to that provider through it,
after the body is final and before it is sent, so re-asks and final answers are signed as the
client's own requests are.

The rule a signer keeps: a signature the client made covers the client's bytes only
(``UpstreamRequest.client_body``). It goes upstream only with those bytes; a body the gateway
changed is signed with the gateway's credentials, or, when it holds none, not sent at all
(``UpstreamUnsigned``): a request under a signature that no longer matches it would be refused
upstream as a forgery, and the client would read the refusal as its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from gateway.upstream.base import Upstream, UpstreamRequest, UpstreamResponse, url_of


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """What a signer is built from: the provider's resolved base URL, the operator's key for it
    (None: unset), and its declared other settings (``UpstreamSpec.settings``) that are set."""

    name: str
    base_url: str
    api_key: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    # The provider's transport bounds (``upstream.connect_timeout_s`` / ``timeout_s``): a signer
    # that makes requests of its own (a token endpoint) waits no longer than a request would.
    connect_timeout_s: float = 10.0
    timeout_s: float = 600.0


class Signer(Protocol):
    async def sign(self, request: UpstreamRequest, url: str) -> UpstreamRequest:
        """``request`` as it may go to ``url`` (the exact URL the transport requests): with the
        gateway's signature or token, or as the client signed it; raises ``UpstreamUnsigned``
        when it may go neither way."""
        ...

    async def aclose(self) -> None: ...


class SignedUpstream:
    """An upstream whose every request is signed first (``Signer``)."""

    __slots__ = ("base_url", "inner", "signer")

    def __init__(self, inner: Upstream, signer: Signer, base_url: str) -> None:
        self.inner, self.signer, self.base_url = inner, signer, base_url

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        signed = await self.signer.sign(request, url_of(self.base_url, request))
        return await self.inner.send(signed)

    async def aclose(self) -> None:
        await self.signer.aclose()
        await self.inner.aclose()
