"""Header rules at the unit level: which headers cross the proxy, in which form.

The server tests check the same rules end to end; these pin the edge cases (case, repeats,
Connection tokens) that are tedious to provoke through real HTTP clients.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.context import header_rules
from gateway.protocols.registry import DEFAULT
from gateway.upstream.headers import HOP_BY_HOP, strip_hop_by_hop


def request_headers(client, extra, api_key, identity):
    """The default upstream's forwarding: its declared key header and credentials."""
    return header_rules(DEFAULT.declared.upstream, api_key, identity, extra).apply(client)


def h(*pairs: tuple[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in pairs]


STRIP_CASES = {
    "end-to-end kept in order, repeats kept": (
        h(("X-A", "1"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("Retry-After", "5")),
        h(("x-a", "1"), ("set-cookie", "a=1"), ("set-cookie", "b=2"), ("retry-after", "5")),
    ),
    "every RFC hop-by-hop name dropped, any case": (
        h(
            ("Connection", "close"),
            ("Keep-Alive", "timeout=5"),
            ("TE", "trailers"),
            ("Trailer", "x"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "h2c"),
            ("Proxy-Authenticate", "Basic"),
            ("Proxy-Authorization", "Basic x"),
            ("Proxy-Connection", "keep-alive"),
            ("X-Keep", "y"),
        ),
        h(("x-keep", "y")),
    ),
    "headers named in Connection dropped": (
        h(("Connection", "X-Hop, x-other ,keep-alive"), ("X-Hop", "1"), ("X-Other", "2"), ("X-Stay", "3")),
        h(("x-stay", "3")),
    ),
    "several Connection headers all count": (
        h(("connection", "x-one"), ("connection", "x-two"), ("x-one", "1"), ("x-two", "2"), ("x-three", "3")),
        h(("x-three", "3")),
    ),
    "empty Connection tokens ignored": (h(("connection", " , ,"), ("x-a", "1")), h(("x-a", "1"))),
    "values untouched (case, spaces, commas)": (
        h(("X-Mixed", "  Some Value, Other ")),
        h(("x-mixed", "  Some Value, Other ")),
    ),
}


@pytest.mark.parametrize("case", STRIP_CASES)
def test_strip_hop_by_hop(case):
    given_headers, expected = STRIP_CASES[case]
    assert strip_hop_by_hop(given_headers) == expected


CLIENT = h(
    ("Host", "gateway:8080"),
    ("Content-Length", "12"),
    ("Authorization", "Bearer sk-client"),
    ("api-key", "azure-client"),
    ("OpenAI-Organization", "org-c"),
    ("Accept-Encoding", "gzip, br"),
    ("Connection", "keep-alive, x-hop"),
    ("x-hop", "1"),
    ("X-Custom", "a"),
    ("x-custom", "b"),
    ("X-HTTP-Method-Override", "GET"),  # never forwarded: the upstream runs the method checked
    ("x-http-method", "DELETE"),
)

REQUEST_CASES = {
    # (extra, api_key, identity) -> expected output
    "plain forward: framing, host and hop-by-hop dropped": (
        {},
        None,
        False,
        h(
            ("authorization", "Bearer sk-client"),
            ("api-key", "azure-client"),
            ("openai-organization", "org-c"),
            ("accept-encoding", "gzip, br"),
            ("x-custom", "a"),
            ("x-custom", "b"),
        ),
    ),
    "server key replaces both key headers": (
        {},
        "sk-server",
        False,
        h(
            ("openai-organization", "org-c"),
            ("accept-encoding", "gzip, br"),
            ("x-custom", "a"),
            ("x-custom", "b"),
            ("authorization", "Bearer sk-server"),
        ),
    ),
    "empty server key means none": (
        {},
        "",
        False,
        h(
            ("authorization", "Bearer sk-client"),
            ("api-key", "azure-client"),
            ("openai-organization", "org-c"),
            ("accept-encoding", "gzip, br"),
            ("x-custom", "a"),
            ("x-custom", "b"),
        ),
    ),
    "configured headers replace the client's, case-insensitively": (
        {"OpenAI-Organization": "org-s", "X-CUSTOM": "s"},
        None,
        False,
        h(
            ("authorization", "Bearer sk-client"),
            ("api-key", "azure-client"),
            ("accept-encoding", "gzip, br"),
            ("openai-organization", "org-s"),
            ("x-custom", "s"),
        ),
    ),
    "identity asks for an unencoded body": (
        {},
        None,
        True,
        h(
            ("authorization", "Bearer sk-client"),
            ("api-key", "azure-client"),
            ("openai-organization", "org-c"),
            ("x-custom", "a"),
            ("x-custom", "b"),
            ("accept-encoding", "identity"),
        ),
    ),
}


@pytest.mark.parametrize("case", REQUEST_CASES)
def test_request_headers(case):
    extra, api_key, identity, expected = REQUEST_CASES[case]
    assert request_headers(CLIENT, extra, api_key, identity) == expected


def test_one_authorization_when_api_key_and_configured_header_both_set():
    # Two Authorization headers are read first-wins by some servers and last-wins by others;
    # upstream.api_key is the dedicated setting, so it is the one sent.
    out = request_headers(h(("authorization", "Bearer c")), {"Authorization": "Bearer cfg"}, "sk-server", False)
    assert [v for k, v in out if k == b"authorization"] == [b"Bearer sk-server"]


def test_one_accept_encoding_when_identity_and_configured_header_both_set():
    out = request_headers([], {"Accept-Encoding": "gzip"}, None, True)
    assert [v for k, v in out if k == b"accept-encoding"] == [b"identity"]


_name = st.sampled_from(
    [
        "x-a",
        "X-B",
        "authorization",
        "content-type",
        "user-agent",
        *[n.decode() for n in HOP_BY_HOP],
        "Connection",
        "Host",
        "Content-Length",
    ]
)
_value = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)


@given(st.lists(st.tuples(_name, _value), max_size=12))
def test_no_hop_by_hop_ever_crosses_and_the_rest_keeps_order(pairs):
    raw = [(k.encode(), v.encode()) for k, v in pairs]
    named = {t.strip().lower() for k, v in raw if k.lower() == b"connection" for t in v.split(b",") if t.strip()}
    for out in (strip_hop_by_hop(raw), request_headers(raw, {}, None, False)):
        names = {k for k, _ in out}
        assert not names & HOP_BY_HOP and not names & named
        assert all(k == k.lower() for k in names)
    kept = [(k.lower(), v) for k, v in raw if k.lower() not in HOP_BY_HOP | named | {b"host", b"content-length"}]
    assert request_headers(raw, {}, None, False) == kept
