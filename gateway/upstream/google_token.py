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
import re
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
    """The gateway's credentials gave no access token (a revoked key, a token endpoint that
    answers an error, or something that is no token): the request is not sent."""

    code = "upstream_token_unavailable"


class TokenTimeout(TokenUnavailable):
    """The token endpoint did not answer within ``upstream.timeout_s``: the request is not sent,
    and the client is told to retry (503) rather than wait on google-auth's own two minutes."""

    status = 503
    code = "upstream_token_timeout"


class ClientToken:
    """The client's credential goes upstream untouched."""

    async def sign(self, request: UpstreamRequest, url: str) -> UpstreamRequest:
        return request

    async def aclose(self) -> None:
        return None


class _Bounded(google.auth.transport.requests.Request):
    """google-auth's HTTP transport with the gateway's timeouts (connect, read) in place of its
    own 120 s: a token endpoint that stalls holds the refresh's thread about as long as a model
    request may wait, no longer."""

    def __init__(self, timeouts: tuple[float, float]) -> None:
        super().__init__()
        self._timeouts = timeouts

    def __call__(
        self, url: str, method: str = "GET", body: Any = None, headers: Any = None, timeout: Any = None, **kwargs: Any
    ) -> Any:
        # google-auth leaves this one method unannotated
        return super().__call__(url, method, body, headers, timeout=self._timeouts, **kwargs)  # type: ignore[no-untyped-call]


# What an access token can be sent as: visible ASCII, nothing else (a header value).
_TOKEN = re.compile(r"[!-~]+")


class GatewayToken:
    """The gateway's access token on every request, in place of the client's credentials.

    One refresh at a time, shared: every request that needs a token while one is being fetched
    waits for that same fetch, each no longer than ``timeout_s`` from its own start (so a stalled
    token endpoint holds no request past its own bound, and requests never queue one refresh
    after another). Whatever the token source does wrong (an error, a body that is no JSON,
    fields of the wrong type, a "token" no header can carry) is ``TokenUnavailable``."""

    def __init__(
        self, credentials: Any, place: TokenPlace, connect_timeout_s: float = 10.0, timeout_s: float = 600.0
    ) -> None:
        self._credentials = credentials
        self._name = place.header.encode("latin-1")
        self._scheme = place.scheme.encode("latin-1")
        self._drop = frozenset(h.encode("latin-1") for h in (place.header, *place.replaces))
        # The thread's own bound lies past each waiter's (``timeout_s`` from its start): a stall
        # is told as the waiters' timeout (503), and the thread still ends soon after.
        self._transport = _Bounded((connect_timeout_s, timeout_s + connect_timeout_s))
        self._timeout_s = timeout_s
        self._refreshing: asyncio.Future[None] | None = None

    async def token(self) -> str:
        """A valid access token: the cached one, else a fresh one (one refresh at a time)."""
        try:
            fresh = self._credentials.valid
        except Exception:  # an expiry of a type no comparison takes: fetch again
            fresh = False
        if not fresh:
            await self._refreshed()
        token = self._credentials.token
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            self._credentials.token = None  # fetched again by the next request, not reused
            raise TokenUnavailable("the gateway's Google credentials gave something that is no access token")
        return token

    async def _refreshed(self) -> None:
        running = self._refreshing
        if running is None or running.done():
            running = self._refreshing = asyncio.ensure_future(
                asyncio.to_thread(self._credentials.refresh, self._transport)
            )
            running.add_done_callback(_observed)
        try:
            async with asyncio.timeout(self._timeout_s):
                await asyncio.shield(running)
        except TimeoutError:
            raise TokenTimeout(
                f"no access token from the gateway's Google credentials within {self._timeout_s:g} s"
            ) from None
        except Exception as exc:  # google-auth's errors, and what it lets through (TypeError, ValueError)
            raise TokenUnavailable(
                f"no access token from the gateway's Google credentials: {type(exc).__name__}: {exc}"
            ) from exc

    async def sign(self, request: UpstreamRequest, url: str) -> UpstreamRequest:
        token = (await self.token()).encode("latin-1")
        headers = [(k, v) for k, v in request.headers if k.lower() not in self._drop]
        return replace(request, headers=[*headers, (self._name, self._scheme + token)])

    async def aclose(self) -> None:
        return None


def _observed(done: asyncio.Future[None]) -> None:
    """A refresh nobody waited for to the end (every waiter timed out): its error is read here,
    not reported as never retrieved."""
    if not done.cancelled():
        done.exception()


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
    return GatewayToken(credentials, place, settings.connect_timeout_s, settings.timeout_s)
