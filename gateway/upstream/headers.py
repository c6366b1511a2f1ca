"""Which headers cross the proxy: end-to-end ones pass, hop-by-hop ones (RFC 9110 7.6.1) do not."""

from __future__ import annotations

from collections.abc import Iterable

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-connection",
    }
)
# Recomputed by whoever sends the message next. ``Expect: 100-continue`` asked the gateway to
# accept the body before it is sent; the gateway has read it whole by the time it sends the
# request on, and an upstream that never answers the expectation would hold it to the timeout.
_REQUEST_DROP = HOP_BY_HOP | {b"host", b"content-length", b"expect"}
# The method the gateway routed and checked is the one the upstream runs: Google's frontend
# honours a method override, which would turn a tenant-checked POST into a list or a delete.
_METHOD_OVERRIDES = frozenset({b"x-http-method-override", b"x-http-method", b"x-method-override"})
# The gateway's own request headers (session, agent, client identity) are addressed to it, not
# to the model provider: forwarding them would leak session names and tenant hashes upstream.
_OWN_PREFIX = b"x-loopguard-"
# What HTTP/1.1 cannot carry in a field value (RFC 9110 5.5): control characters other than
# HTAB, and whitespace around the value (a parser strips it, a strict sender refuses it).
_CONTROL = frozenset(range(0x20)) - {0x09} | {0x7F}


def unsendable_header(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The name of the first header whose value HTTP cannot carry, or None."""
    for name, value in headers:
        if value[:1] in (b" ", b"\t") or value[-1:] in (b" ", b"\t") or not _CONTROL.isdisjoint(value):
            return name.decode("latin-1").lower()
    return None


def strip_hop_by_hop(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    pairs = [(k.lower(), v) for k, v in headers]
    named = _connection_tokens(pairs)
    return [(k, v) for k, v in pairs if k not in HOP_BY_HOP and k not in named]


class HeaderRules:
    """Which client headers go upstream and what is added, worked out once per upstream: the
    hot path is then one pass over the client's headers.

    ``key``: the operator's key as the (header, value) its protocol sends it in; it replaces
    every client header in ``credentials``, so no client key goes upstream next to it.
    ``identity`` asks for an unencoded body: the gateway must read chat responses to judge the
    tool calls in them, so it cannot relay a gzip stream it would have to decode anyway.
    """

    __slots__ = ("added", "drop")

    def __init__(
        self,
        extra: dict[str, str],
        identity: bool,
        key: tuple[bytes, bytes] | None = None,
        credentials: Iterable[bytes] = (),
    ) -> None:
        # The key and identity win over a configured header of the same name: each is sent once.
        forced = ({key[0]} if key else set()) | ({b"accept-encoding"} if identity else set())
        replaced = {k.lower().encode("latin-1") for k in extra} | forced
        if key:
            replaced |= set(credentials)
        self.drop = frozenset(_REQUEST_DROP | _METHOD_OVERRIDES | replaced)
        added = [
            (k, v)
            for k, v in ((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items())
            if k not in forced
        ]
        if key:
            added.append(key)
        if identity:
            added.append((b"accept-encoding", b"identity"))
        self.added = tuple(added)

    def apply(self, client: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        pairs = [(k.lower(), v) for k, v in client]
        named = _connection_tokens(pairs)
        drop = self.drop | named if named else self.drop
        out = [(k, v) for k, v in pairs if k not in drop and not k.startswith(_OWN_PREFIX)]
        out += self.added
        return out


def _connection_tokens(pairs: list[tuple[bytes, bytes]]) -> frozenset[bytes]:
    """Headers named in ``Connection`` are hop-by-hop for this message too."""
    tokens = [v for k, v in pairs if k == b"connection"]
    return frozenset(t.strip().lower() for v in tokens for t in v.split(b",") if t.strip())
