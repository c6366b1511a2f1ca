"""``google_token``: the client's token forwarded, or the gateway's own from google-auth's
default chain (a service-account file whose token endpoint is a real scripted server here),
fetched once, reused until near its expiry, one refresh at a time, in place of the client's
credentials."""

from __future__ import annotations

import asyncio

import pytest
from support.google_oauth import BROKEN, TokenServer
from support.servers import serve

from gateway.config import ConfigError
from gateway.protocols.vertex import cloud
from gateway.upstream import google_token
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.signing import ProviderSettings

PLACE = cloud.TOKEN  # Vertex's: its token in place of the client's key, token and quota project
URL = "https://aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/google/models/m:generateContent"
CLIENT = UpstreamRequest(
    "POST",
    "/v1/projects/p/locations/l/publishers/google/models/m:generateContent",
    headers=[
        (b"authorization", b"Bearer ya29.client"),
        (b"x-goog-api-key", b"AIza-client"),
        (b"x-goog-user-project", b"client-project"),
        (b"x-a", b"1"),
    ],
    body=b"{}",
    client_body=b"{}",
)


def settings(**extra: str) -> ProviderSettings:
    return ProviderSettings("vertex", "https://aiplatform.googleapis.com", None, extra)


@pytest.fixture
def token_server(tmp_path, monkeypatch):
    """start(expires_in) -> a running TokenServer the default chain's service account names."""
    contexts = []

    def start(expires_in: int = 3600) -> TokenServer:
        server = TokenServer(expires_in)
        ctx = serve(server.app)
        contexts.append(ctx)
        server.url = ctx.__enter__()
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(server.key_file(tmp_path)))
        return server

    yield start
    for ctx in contexts:
        ctx.__exit__(None, None, None)


async def sign_all(signer, count: int) -> list[list[tuple[bytes, bytes]]]:
    signed = await asyncio.gather(*(signer.sign(CLIENT, URL) for _ in range(count)))
    return [r.headers for r in signed]


def test_by_default_the_clients_token_goes_as_it_came():
    signer = google_token.signer(PLACE, settings())
    assert asyncio.run(signer.sign(CLIENT, URL)) is CLIENT


def test_the_gateways_token_replaces_the_clients_and_is_fetched_once(token_server):
    server = token_server()
    signer = google_token.signer(PLACE, settings(credentials="gateway"))

    first = asyncio.run(sign_all(signer, 8))  # at once: one refresh, the others wait for it
    later = asyncio.run(sign_all(signer, 3))

    assert server.issued == ["ya29.gateway-1"]
    assert all(h == [(b"x-a", b"1"), (b"authorization", b"Bearer ya29.gateway-1")] for h in first + later)


def test_a_token_near_its_expiry_is_fetched_again(token_server):
    server = token_server(expires_in=60)  # inside google-auth's refresh margin: never reused
    signer = google_token.signer(PLACE, settings(credentials="gateway"))

    asyncio.run(sign_all(signer, 1))
    asyncio.run(sign_all(signer, 1))

    assert server.issued == ["ya29.gateway-1", "ya29.gateway-2"]


def test_a_refused_refresh_is_an_upstream_error_and_nothing_is_signed(token_server):
    server = token_server()
    server.failing = True
    signer = google_token.signer(PLACE, settings(credentials="gateway"))
    with pytest.raises(google_token.TokenUnavailable, match="access token"):
        asyncio.run(signer.sign(CLIENT, URL))


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("both", "neither 'client' nor 'gateway'"), ("gateway", "google-auth found no credentials")],
)
def test_a_setting_that_cannot_work_is_refused_at_startup(tmp_path, monkeypatch, mode, reason):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError) as refused:
        google_token.signer(PLACE, settings(credentials=mode))
    assert refused.value.path == "upstream.vertex_credentials" and reason in refused.value.reason


def gateway_signer(timeout_s: float = 600.0) -> google_token.GatewayToken:
    bounded = ProviderSettings(
        "vertex", "https://aiplatform.googleapis.com", None, {"credentials": "gateway"}, 1.0, timeout_s
    )
    signer = google_token.signer(PLACE, bounded)
    assert isinstance(signer, google_token.GatewayToken)
    return signer


@pytest.mark.parametrize("broken", sorted(set(BROKEN) - {"stall"}))
def test_a_token_source_answering_what_is_no_token_is_an_upstream_error(token_server, broken):
    """Whatever google-auth makes of it (an error of its own, a TypeError, a "token" that is a
    number or carries a line break), nothing is signed and the request is not sent."""
    server = token_server()
    server.broken = broken
    signer = gateway_signer()
    with pytest.raises(google_token.TokenUnavailable) as failed:
        asyncio.run(signer.sign(CLIENT, URL))
    assert failed.value.status == 502 and not isinstance(failed.value, google_token.TokenTimeout)
    server.broken = None  # healed: the next request fetches a token that works
    assert asyncio.run(signer.sign(CLIENT, URL)).headers[-1] == (b"authorization", b"Bearer ya29.gateway-1")


def test_a_stalled_token_endpoint_holds_every_waiting_request_to_its_own_bound_on_one_fetch(token_server):
    """Eight requests at once while the endpoint says nothing: one token request is made, and
    each request ends with ``TokenTimeout`` (503) at its own bound, not one after another."""
    server = token_server()
    server.broken = "stall"
    signer = gateway_signer(timeout_s=0.5)

    async def all_at_once() -> list[BaseException | object]:
        return await asyncio.gather(*(signer.sign(CLIENT, URL) for _ in range(8)), return_exceptions=True)

    try:
        outcomes = asyncio.run(all_at_once())
    finally:
        server.broken = None
    assert all(isinstance(o, google_token.TokenTimeout) and o.status == 503 for o in outcomes), outcomes
    assert server.asked == 1
