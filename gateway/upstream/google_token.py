"""Google OAuth access tokens on every request to a Google Cloud provider (Vertex AI).

Two ways, by the provider's ``credentials`` setting (``upstream.<provider>_credentials``):

- ``client`` (the default): the client's own token goes upstream as it came. A bearer token
  is not bound to the request's bytes, so a body the gateway edited goes under it too.
- ``gateway``: the gateway holds the credentials, found by google-auth's default chain (a
  service-account file named by ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's application default
  credentials, workload identity on the metadata server). Its access token replaces whatever
  credential the client sent (clients run with their own auth skipped send none). The token is
  fetched once and reused until shortly before it expires (google-auth's ``valid``), refreshed
  off the event loop (google-auth blocks), one refresh at a time: no request waits on a token
  round trip but the first after expiry.

The header and scheme a token goes in are the protocol's (``TokenPlace``): this floor spells
no wire format.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

import google.auth
import google.auth.exceptions
import google.auth.transport.requests

from gateway.config import ConfigError
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamError
from gateway.upstream.signing import ProviderSettings, Signer

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
MODES = ("client", "gateway")


@dataclass(frozen=True, slots=True)
class TokenPlace:
    """Where a token goes (``header``: ``scheme`` + token) and which client headers carry a
    credential it replaces (lower case)."""

    header: str
    scheme: str
    replaces: tuple[str, ...]


class TokenUnavailable(UpstreamError):
    """The gateway's credentials gave no access token (a revoked key, an unreachable token
    endpoint): the request is not sent."""

    code = "upstream_token_unavailable"


class ClientToken:
    """The client's credential goes upstream untouched."""

    async def sign(self, request: UpstreamRequest, url: str) -> UpstreamRequest:
        return request

    async def aclose(self) -> None:
        return None


class GatewayToken:
    """The gateway's access token on every request, in place of the client's credentials."""

    def __init__(self, credentials: Any, place: TokenPlace) -> None:
        self._credentials = credentials
        self._name = place.header.encode("latin-1")
        self._scheme = place.scheme.encode("latin-1")
        self._drop = frozenset(h.encode("latin-1") for h in (place.header, *place.replaces))
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        """A valid access token: the cached one, else a fresh one (one refresh at a time)."""
        if not self._credentials.valid:
            async with self._lock:
                if not self._credentials.valid:
                    try:
                        await asyncio.to_thread(self._credentials.refresh, google.auth.transport.requests.Request())
                    except google.auth.exceptions.GoogleAuthError as exc:
                        raise TokenUnavailable(f"no access token from the gateway's Google credentials: {exc}") from exc
        return str(self._credentials.token)

    async def sign(self, request: UpstreamRequest, url: str) -> UpstreamRequest:
        token = (await self.token()).encode("latin-1")
        headers = [(k, v) for k, v in request.headers if k.lower() not in self._drop]
        return replace(request, headers=[*headers, (self._name, self._scheme + token)])

    async def aclose(self) -> None:
        return None


def signer(place: TokenPlace, settings: ProviderSettings) -> Signer:
    """The provider's signer by its ``credentials`` setting (``client`` unless set)."""
    mode = settings.extra.get("credentials", "client")
    key = f"upstream.{settings.name}_credentials"
    if mode not in MODES:
        raise ConfigError("<config>", key, f"{mode!r} is neither 'client' nor 'gateway'")
    if mode == "client":
        return ClientToken()
    try:
        credentials, _project = google.auth.default(scopes=list(SCOPES))
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise ConfigError("<config>", key, f"'gateway', but google-auth found no credentials: {exc}") from exc
    return GatewayToken(credentials, place)
