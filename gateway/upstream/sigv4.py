"""AWS Signature Version 4 for a provider behind AWS (Amazon Bedrock), with botocore's signer.

Which credentials a request goes with, in order:

1. ``upstream.<provider>_api_key`` set: a Bedrock API key, sent as ``Authorization: Bearer``
   (the header rules put it in place of the client's credentials); nothing is signed.
2. The client sent a Bedrock API key (``Authorization: Bearer ...``): it goes as sent. A key is
   no signature over the bytes, so a body the gateway changed goes with it too.
3. The gateway holds AWS credentials (botocore's standard chain: environment, shared profile,
   container or instance role): every request is signed with them, the client's own signature
   headers (``authorization``, ``x-amz-date``, ``x-amz-security-token``,
   ``x-amz-content-sha256``) dropped first. A client that sends none (Claude Code with
   ``CLAUDE_CODE_SKIP_BEDROCK_AUTH``) is served so.
4. No gateway credentials, and the client signed: the request goes as the client signed it only
   when its body is the client's own bytes (``UpstreamRequest.client_body``); a body the gateway
   changed is not sent (``UpstreamUnsigned``): the signature no longer covers it.
5. Nothing at all: the request goes unsigned and the cloud answers as it answers those.

Each request is signed once, in process: no round trip besides the request itself. Resolving
and refreshing credentials may block (a profile file, the instance metadata service, an STS
call), so it runs in a worker thread, once at first use and again only when botocore says the
temporary credentials are near expiry; the frozen credentials are kept in between.

The signature covers the host, the content type, every ``x-amz*`` header and the body's hash,
over the exact URL the transport requests (its path as sent, percent escapes and all: AWS
computes the canonical request from the raw path it receives). Credentials are never logged.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, ReadOnlyCredentials, RefreshableCredentials
from botocore.session import Session, get_session

from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamUnsigned
from gateway.upstream.signing import ProviderSettings

__all__ = ["DEFAULT_REGION", "SigV4Signer", "region_of", "regional_url", "signing_client"]

DEFAULT_REGION = "us-east-1"  # the last resort, as the AWS CLI's examples use it
_AUTHORIZATION = b"authorization"
# A client's signature: dropped whenever the gateway signs (or its key goes instead).
CLIENT_SIGNATURE = frozenset({_AUTHORIZATION, b"x-amz-date", b"x-amz-security-token", b"x-amz-content-sha256"})
_SIGNED_TYPES = frozenset({b"content-type"})  # besides host and the x-amz* headers


_SIGV4 = b"AWS4-HMAC-SHA256 "
_CREDENTIAL = b"Credential="


def signing_client(auth: bytes) -> bytes | None:
    """The access key id a SigV4 ``Authorization`` was made with (its ``Credential=`` scope's
    first part), which names the client across requests; None for any other value. Not
    verified here: it is public, so it names a client but proves nothing."""
    if not auth.startswith(_SIGV4):
        return None
    at = auth.find(_CREDENTIAL)
    if at < 0:
        return None
    key = auth[at + len(_CREDENTIAL) :].split(b"/", 1)[0]
    return _SIGV4 + key if key else None


def region_of(extra: Mapping[str, str], session: Session | None = None) -> str:
    """The region to call and sign for: the configured ``region``, else ``AWS_REGION`` /
    ``AWS_DEFAULT_REGION``, else the profile's (botocore), else ``us-east-1``."""
    found = extra.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if found:
        return found
    if session is not None:
        return _region_in(session)
    return _profile_region(tuple(os.environ.get(name) for name in _PROFILE_SELECTORS))


# What selects the profile botocore reads a region from.
_PROFILE_SELECTORS = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@functools.lru_cache(maxsize=8)
def _profile_region(selectors: tuple[str | None, ...]) -> str:
    """The profile's region, once per selecting environment: a botocore session costs ~30 ms
    of CPU to build, and a gateway resolves the region for each AWS protocol on every build
    of its app (each reload)."""
    return _region_in(get_session())


def _region_in(session: Session) -> str:
    try:
        configured = session.get_config_variable("region")
    except Exception:  # an unreadable profile names no region: the default serves
        configured = None
    return configured if isinstance(configured, str) and configured else DEFAULT_REGION


def regional_url(template: str, extra: Mapping[str, str]) -> str:
    """``template`` with its ``{region}`` filled in (``https://bedrock-runtime.{region}...``)."""
    return template.replace("{region}", region_of(extra))


class SigV4Signer:
    """Signs each request to one AWS service (``Signer``); see the module for the rules."""

    __slots__ = ("_creds", "_frozen", "_key", "_lock", "_resolved", "_session", "region", "service")

    def __init__(self, settings: ProviderSettings, service: str, session: Session | None = None) -> None:
        self._session = session  # botocore's, made when credentials are first needed (~30 ms)
        self.region = region_of(settings.extra, session)
        self.service = service
        self._key = settings.api_key  # sent by the header rules; nothing to sign then
        self._creds: Credentials | None = None
        self._frozen: ReadOnlyCredentials | None = None
        self._resolved = False
        self._lock = asyncio.Lock()

    async def sign(self, request: UpstreamRequest, url: str) -> UpstreamRequest:
        if self._key is not None or _bearer(request.headers):
            return request
        frozen = await self.credentials()
        if frozen is not None:
            return self.signed(request, url, frozen)
        if _header(request.headers, _AUTHORIZATION) is not None and request.body != request.client_body:
            raise UpstreamUnsigned(
                "The gateway changed this request's body and holds no AWS credentials to sign it; "
                "the client's signature covers only the body it sent. Give the gateway AWS "
                "credentials (environment, profile or role) or use a Bedrock API key."
            )
        return request

    def signed(self, request: UpstreamRequest, url: str, frozen: ReadOnlyCredentials) -> UpstreamRequest:
        """``request`` signed for ``url`` with ``frozen`` (CPU only: a hash and four HMACs)."""
        kept = [(name, value) for name, value in request.headers if name not in CLIENT_SIGNATURE]
        to_sign = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in kept
            if name in _SIGNED_TYPES or name.startswith(b"x-amz")
        }
        aws = AWSRequest(method=request.method, url=url, data=request.body, headers=to_sign)
        SigV4Auth(frozen, self.service, self.region).add_auth(aws)
        added = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in aws.headers.items()
            if name.lower().encode("latin-1") in CLIENT_SIGNATURE
        ]
        return replace(request, headers=[*kept, *added])

    async def credentials(self) -> ReadOnlyCredentials | None:
        """The gateway's credentials, frozen; None when the chain finds none. Resolved, and
        refreshed near expiry, off the event loop."""
        creds = self._creds
        if self._resolved and (creds is None or not _refresh_due(creds)):
            return self._frozen
        async with self._lock:
            if not self._resolved:
                self._creds = await asyncio.to_thread(self._credentials)
                self._resolved = True
            creds = self._creds
            if creds is not None and (self._frozen is None or _refresh_due(creds)):
                self._frozen = await asyncio.to_thread(creds.get_frozen_credentials)
        return self._frozen

    def _credentials(self) -> Credentials | None:
        """The credential chain's answer (it may read files or call a metadata service)."""
        if self._session is None:
            self._session = get_session()
        creds: Credentials | None = self._session.get_credentials()
        return creds

    async def aclose(self) -> None:
        return None


def _refresh_due(creds: Any) -> bool:
    """Temporary credentials within botocore's advisory window of their expiry."""
    return isinstance(creds, RefreshableCredentials) and bool(creds.refresh_needed())


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    return next((value for key, value in headers if key == name), None)


def _bearer(headers: list[tuple[bytes, bytes]]) -> bool:
    """The client authenticates with a Bedrock API key, not a signature."""
    auth = _header(headers, _AUTHORIZATION)
    return auth is not None and auth[:7].lower() == b"bearer "
