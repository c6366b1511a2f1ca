"""The upstream interface: everything the gateway needs from a model provider, and no more."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(slots=True)
class UpstreamRequest:
    method: str
    path: str  # relative to the upstream base URL, e.g. "chat/completions"
    query: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    # The client's own body, when this request carries a client's headers: a signature the
    # client made covers these bytes and no others (``gateway.upstream.signing``). None: a
    # request the gateway wrote itself.
    client_body: bytes | None = None


def url_of(base_url: str, request: UpstreamRequest) -> str:
    """The URL a transport requests for ``request`` on the upstream at ``base_url``, exactly:
    ``path`` is already percent-encoded (the canonical path of ``server/paths.py``, which holds
    no ``?``, ``#`` or escape encoded twice), so the transports send it as it is and a signer
    signs what is sent."""
    url = base_url.rstrip("/") + "/" + request.path.lstrip("/")
    if request.query:
        url += "?" + request.query.decode("latin-1")
    return url


class UpstreamResponse(Protocol):
    status: int
    headers: list[tuple[bytes, bytes]]  # end-to-end headers only

    def aiter_raw(self) -> AsyncIterator[bytes]: ...

    async def aread(self) -> bytes: ...

    async def aclose(self) -> None: ...


class Upstream(Protocol):
    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        """Send and return once the response headers arrived; raises ``UpstreamError``."""
        ...

    async def aclose(self) -> None: ...


def event_stream(headers: list[tuple[bytes, bytes]]) -> bool:
    """The reply is an event stream (``text/event-stream``), whatever the request asked for: an
    upstream may answer a stream request with one JSON body, or a unary one with events."""
    return any(k == b"content-type" and v.lower().startswith(b"text/event-stream") for k, v in headers)


def json_body(headers: list[tuple[bytes, bytes]]) -> bool:
    """The reply says it is one JSON body (``application/json``, ``application/problem+json``)."""
    for k, v in headers:
        if k == b"content-type":
            kind = v.partition(b";")[0].strip().lower()
            return kind == b"application/json" or (kind.startswith(b"application/") and kind.endswith(b"+json"))
    return False


_BLANK = b" \t\r\n\xef\xbb\xbf"  # whitespace, and the byte order mark either shape may open with


def opens_whole(opening: bytes) -> bool | None:
    """What a reply's first bytes say it is, whatever its content type says: True, one JSON
    body (``{`` or ``[``: no event stream opens so); False, events; None: nothing but blanks yet."""
    head = opening.lstrip(_BLANK)[:1]
    return None if not head else head in b"{["
