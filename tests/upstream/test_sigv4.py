"""``SigV4Signer``: which credentials each request to AWS goes with, and that a signature the
gateway makes verifies as AWS verifies it (botocore over the raw path, the signed headers and
the body, against the scripted credentials)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from botocore.credentials import Credentials, RefreshableCredentials
from support import sigv4_check

from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamUnsigned
from gateway.upstream.signing import ProviderSettings
from gateway.upstream.sigv4 import DEFAULT_REGION, SigV4Signer, region_of, regional_url, signing_client

URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/arn:aws:bedrock:us-east-1:1:inference-profile%2Fus.m-v1:0/invoke"
BODY = b'{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[]}'
CLIENT_SIGNED = [
    (b"content-type", b"application/json"),
    (b"authorization", b"AWS4-HMAC-SHA256 Credential=AKIDCLIENT/20260101/us-east-1/bedrock/aws4_request, x"),
    (b"x-amz-date", b"20260101T000000Z"),
    (b"x-amz-security-token", b"client-token"),
]


class Session:
    """botocore's session as the signer uses it: a credential chain, counted."""

    def __init__(self, credentials: Credentials | None, region: str | None = None) -> None:
        self.found, self.region, self.calls = credentials, region, 0

    def get_credentials(self) -> Credentials | None:
        self.calls += 1
        return self.found

    def get_config_variable(self, name: str) -> str | None:
        return self.region if name == "region" else None


def signer(credentials: Credentials | None = None, key: str | None = None, **extra: str) -> SigV4Signer:
    settings = ProviderSettings("bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com", key, extra)
    return SigV4Signer(settings, "bedrock", Session(credentials, "us-east-1"))  # type: ignore[arg-type]


def scripted() -> Credentials:
    return Credentials(sigv4_check.ACCESS_KEY, sigv4_check.SECRET_KEY)


def request(headers: list[tuple[bytes, bytes]], body: bytes = BODY, client: bytes | None = BODY) -> UpstreamRequest:
    path = urlsplit(URL).path
    return UpstreamRequest("POST", path, b"", headers, body, client)


def verifies(sent: UpstreamRequest) -> tuple[str, str] | None:
    headers = [(k.decode(), v.decode()) for k, v in sent.headers]
    host = urlsplit(URL).netloc
    return sigv4_check.refusal(sent.method, sent.path, "", [*headers, ("host", host)], sent.body, host)


@dataclass(frozen=True)
class Case:
    name: str
    credentials: bool  # the gateway holds the scripted credentials
    headers: list[tuple[bytes, bytes]]
    edited: bool  # the gateway changed the body
    sent: str  # "signed": the gateway's signature; "as-is": the client's request untouched


CASES = [
    Case("no client auth, gateway signs", True, [(b"content-type", b"application/json")], False, "signed"),
    Case("client signature replaced", True, CLIENT_SIGNED, False, "signed"),
    Case("edited body re-signed", True, CLIENT_SIGNED, True, "signed"),
    Case("client's signature, its own bytes", False, CLIENT_SIGNED, False, "as-is"),
    Case("bedrock API key, edited body", False, [(b"authorization", b"Bearer ABSK-key")], True, "as-is"),
    Case(
        "bedrock API key wins over gateway credentials", True, [(b"authorization", b"Bearer ABSK-key")], True, "as-is"
    ),
    Case("nothing to sign with", False, [(b"content-type", b"application/json")], True, "as-is"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_which_credentials_a_request_goes_with(case: Case) -> None:
    body = BODY.replace(b"[]", b'[{"role":"user","content":"note"}]') if case.edited else BODY
    outgoing = request(case.headers, body)
    sent = asyncio.run(signer(scripted() if case.credentials else None).sign(outgoing, URL))

    if case.sent == "as-is":
        assert sent == outgoing
        return
    names = [k for k, _ in sent.headers]
    assert names.count(b"authorization") == 1 and names.count(b"x-amz-date") == 1
    assert b"x-amz-security-token" not in names  # the client's token went with its signature
    assert sent.body == body
    assert verifies(sent) is None


def test_a_client_signature_over_other_bytes_is_never_sent() -> None:
    edited = request(CLIENT_SIGNED, BODY + b" ")
    with pytest.raises(UpstreamUnsigned, match="changed this request's body"):
        asyncio.run(signer(None).sign(edited, URL))


def test_a_configured_api_key_is_left_to_the_header_rules() -> None:
    outgoing = request([(b"authorization", b"Bearer ABSK-operator")], BODY + b" ")
    assert asyncio.run(signer(scripted(), key="ABSK-operator").sign(outgoing, URL)) == outgoing


def test_a_signature_for_another_body_or_path_does_not_verify() -> None:
    sent = asyncio.run(signer(scripted()).sign(request([]), URL))
    assert verifies(replace(sent, body=sent.body + b" "))[0] == "InvalidSignatureException"  # type: ignore[index]
    assert verifies(replace(sent, path=sent.path.replace("%2F", "/")))[0] == "InvalidSignatureException"  # type: ignore[index]


def test_session_tokens_are_signed_and_sent() -> None:
    creds = Credentials(sigv4_check.ACCESS_KEY, sigv4_check.SECRET_KEY, "session-token")
    sent = asyncio.run(signer(creds).sign(request(CLIENT_SIGNED), URL))
    assert dict(sent.headers)[b"x-amz-security-token"] == b"session-token"
    assert b"x-amz-security-token" in dict(sent.headers)[b"authorization"]  # in SignedHeaders
    assert verifies(sent) is None


def test_the_chain_is_read_once_for_many_requests() -> None:
    session = Session(scripted())
    settings = ProviderSettings("bedrock", "https://example", None, {"region": "us-east-1"})
    sig = SigV4Signer(settings, "bedrock", session)  # type: ignore[arg-type]

    async def many() -> None:
        await asyncio.gather(*(sig.sign(request([]), URL) for _ in range(20)))

    asyncio.run(many())
    assert session.calls == 1


def test_temporary_credentials_are_refreshed_off_the_event_loop_near_expiry() -> None:
    fetched: list[bool] = []  # on the event loop, per fetch

    def refresh() -> dict[str, Any]:
        fetched.append(_on_event_loop())
        # The first fetch is already near expiry, the next ones last an hour.
        lasts = timedelta(seconds=60) if len(fetched) == 1 else timedelta(hours=1)
        return {
            "access_key": sigv4_check.ACCESS_KEY,
            "secret_key": sigv4_check.SECRET_KEY,
            "token": f"token-{len(fetched)}",
            "expiry_time": (datetime.now(UTC) + lasts).isoformat(),
        }

    creds = RefreshableCredentials.create_from_metadata(refresh(), refresh, "test")
    sig = signer(creds)

    async def twice() -> list[UpstreamRequest]:
        return [await sig.sign(request([]), URL) for _ in range(3)]

    sent = asyncio.run(twice())
    assert fetched == [False, False]  # the first fetch, then one refresh, neither on the loop
    assert [dict(s.headers)[b"x-amz-security-token"] for s in sent] == [b"token-2"] * 3


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize(
    ("extra", "env", "profile", "expected"),
    [
        ({"region": "eu-west-1"}, {"AWS_REGION": "us-west-2"}, "ap-south-1", "eu-west-1"),
        ({}, {"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "eu-central-1"}, None, "us-west-2"),
        ({}, {"AWS_DEFAULT_REGION": "eu-central-1"}, "ap-south-1", "eu-central-1"),
        ({}, {}, "ap-south-1", "ap-south-1"),
        ({}, {}, None, DEFAULT_REGION),
    ],
)
def test_the_region(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, str], env: dict[str, str], profile: str | None, expected: str
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert region_of(extra, Session(None, profile)) == expected  # type: ignore[arg-type]


def test_the_regional_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    template = "https://bedrock-runtime.{region}.amazonaws.com"
    assert regional_url(template, {}) == "https://bedrock-runtime.eu-west-3.amazonaws.com"
    assert regional_url(template, {"region": "us-west-2"}) == "https://bedrock-runtime.us-west-2.amazonaws.com"


def test_a_signing_client_is_one_client_across_requests() -> None:
    """Each signature differs, the access key id it names does not: one session namespace."""
    from gateway.protocols.registry import KEY_PLACES

    def signed_by(key: str, signature: str) -> dict[str, str]:
        scope = f"Credential={key}/20260101/us-east-1/bedrock/aws4_request"
        return {"authorization": f"AWS4-HMAC-SHA256 {scope}, SignedHeaders=host, Signature={signature}"}

    first, again, other = (
        KEY_PLACES.credential_hash(signed_by(key, sig))
        for key, sig in (("AKID1", "a" * 64), ("AKID1", "b" * 64), ("AKID2", "a" * 64))
    )
    assert first == again != other
    assert signing_client(b"Bearer ABSK-key") is None
    assert signing_client(b"AWS4-HMAC-SHA256 SignedHeaders=host") is None
