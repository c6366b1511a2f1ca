"""Both upstream clients against a real HTTP server: a relay forwards what the client sent and
what the upstream answered, and adds none of a browser-like client's conveniences."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest
from support.ports import refused_port
from support.upstream import Reply

from gateway.config import UpstreamConfig
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.build import build_upstream
from gateway.upstream.errors import UpstreamConnectError


@pytest.fixture(params=["aiohttp", "httpx"])
async def make_transport(request):
    made = []

    def make(base_url: str, **settings):
        made.append(build_upstream(UpstreamConfig(base_url=base_url, transport=request.param, **settings)))
        return made[-1]

    yield make
    for transport in made:
        await transport.aclose()


async def _get(transport, path: str = "models", headers=()) -> tuple[int, dict[bytes, bytes], bytes]:
    response = await transport.send(UpstreamRequest("GET", path, headers=list(headers)))
    try:
        return response.status, dict(response.headers), await response.aread()
    finally:
        await response.aclose()


async def test_adds_no_headers_the_client_did_not_send(make_transport, upstream):
    transport = make_transport(upstream.url + "/v1")
    await _get(transport, headers=[(b"x-only", b"1")])
    sent = upstream.last["headers"]
    assert sent["x-only"] == "1"
    assert not {"accept-encoding", "user-agent", "accept", "content-type", "cookie"} & set(sent)


async def test_compressed_body_relayed_as_is(make_transport, upstream):
    packed = gzip.compress(b'{"object": "list", "data": []}')
    upstream.passthrough_script.append(Reply(body=packed, headers={"content-encoding": "gzip"}))
    transport = make_transport(upstream.url + "/v1")
    status, headers, body = await _get(transport, headers=[(b"accept-encoding", b"gzip")])
    assert (status, headers[b"content-encoding"], body) == (200, b"gzip", packed)
    assert upstream.last["headers"]["accept-encoding"] == "gzip"


async def test_cookies_of_one_client_never_reach_the_next(make_transport, upstream):
    upstream.passthrough_script.append(Reply(body=b"{}", raw_headers=[("set-cookie", "session=alice; path=/")]))
    transport = make_transport(upstream.url + "/v1")
    _, headers, _ = await _get(transport)
    assert headers[b"set-cookie"] == b"session=alice; path=/"  # relayed to its client ...
    await _get(transport)
    assert "cookie" not in upstream.last["headers"]  # ... and not kept for anyone else


async def test_redirects_are_relayed_not_followed(make_transport, upstream):
    upstream.passthrough_script.append(Reply(status=307, body=b"", headers={"location": upstream.url + "/v1/models"}))
    transport = make_transport(upstream.url + "/v1")
    status, headers, _ = await _get(transport, "files")
    assert status == 307 and headers[b"location"].endswith(b"/v1/models")
    assert len(upstream.requests) == 1


async def test_proxy_settings_of_the_environment_are_ignored(make_transport, upstream, monkeypatch, closed_url):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, closed_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    status, _, _ = await _get(make_transport(upstream.url + "/v1"))
    assert status == 200


async def test_connection_refused_is_an_upstream_connect_error(make_transport, closed_url):
    with pytest.raises(UpstreamConnectError) as raised:
        await _get(make_transport(closed_url + "/v1"))
    assert raised.value.__cause__ is not None and raised.value.status == 502


@pytest.fixture
def closed_url() -> Iterator[str]:
    """A URL nothing listens on: connection refused (held for the test, so no parallel test's
    server takes the port)."""
    with refused_port() as port:
        yield f"http://127.0.0.1:{port}"
