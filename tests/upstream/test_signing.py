"""``SignedUpstream``: every request to a signing provider is signed once, after its body is
final, for the exact URL the transport requests."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from gateway.upstream.base import UpstreamRequest
from gateway.upstream.signing import SignedUpstream


class Recording:
    """An upstream and a signer that note what reached them."""

    def __init__(self) -> None:
        self.signed: list[tuple[UpstreamRequest, str]] = []
        self.sent: list[UpstreamRequest] = []
        self.closed: list[str] = []

    async def sign(self, request: UpstreamRequest, url: str) -> UpstreamRequest:
        self.signed.append((request, url))
        return replace(request, headers=[*request.headers, (b"authorization", b"signed " + request.body)])

    async def send(self, request: UpstreamRequest) -> object:
        self.sent.append(request)
        return object()

    async def aclose(self) -> None:
        self.closed.append("closed")


def test_each_request_is_signed_for_its_url_then_sent() -> None:
    seen = Recording()
    upstream = SignedUpstream(seen, seen, "https://cloud.example/base/")
    first = UpstreamRequest("POST", "/model/m:0/invoke", b"a=1", [(b"x-a", b"1")], b"edited", b"client")

    asyncio.run(upstream.send(first))
    asyncio.run(upstream.send(replace(first, path="model/m:0/converse", query=b"", body=b"again")))

    assert [url for _, url in seen.signed] == [
        "https://cloud.example/base/model/m:0/invoke?a=1",
        "https://cloud.example/base/model/m:0/converse",
    ]
    assert [dict(r.headers)[b"authorization"] for r in seen.sent] == [b"signed edited", b"signed again"]
    assert seen.signed[0][0].client_body == b"client"


def test_closing_closes_the_signer_and_the_transport() -> None:
    seen = Recording()
    asyncio.run(SignedUpstream(seen, seen, "https://cloud.example").aclose())
    assert seen.closed == ["closed", "closed"]
