"""The one reading of a client's key: what the gate checks and hashes is what the session
namespace is keyed by, whichever header or query parameter the key came in."""

from __future__ import annotations

import hashlib

import pytest

from gateway.protocols.registry import KEY_PLACES
from gateway.wire.credentials import KeyPlaces

PLACES = KeyPlaces(("authorization", "x-api-key", "x-goog-api-key"), ("key",))


@pytest.mark.parametrize(
    ("headers", "query", "key"),
    [
        ([(b"Authorization", b"Bearer  sk-1 ")], b"", b"sk-1"),  # a bearer token, trimmed
        ([(b"authorization", b"Bearer ")], b"", b""),  # empty: refused by the gate, not "no key"
        ([(b"x-api-key", b"sk-2"), (b"authorization", b"Bearer sk-1")], b"", b"sk-1"),  # bearer first
        ([(b"x-goog-api-key", b"g"), (b"x-api-key", b"a")], b"", b"a"),  # then the declared order
        ([(b"x-api-key", b""), (b"x-goog-api-key", b"g")], b"", b"g"),  # an empty header is none
        ([(b"x-api-key", b"first"), (b"x-api-key", b"second")], b"", b"first"),
        ([], b"alt=sse&key=gm%2Dk", b"gm-k"),  # then the query
        ([(b"authorization", b"Basic dXNlcg==")], b"", b"Basic dXNlcg=="),  # else the whole value
        ([(b"authorization", b"Basic x")], b"key=q", b"q"),
        ([(b"content-type", b"application/json")], b"", None),
    ],
)
def test_the_key_a_client_presents(headers, query, key):
    assert PLACES.credential(headers, query) == key


@pytest.mark.parametrize(
    "headers",
    [
        {"authorization": "Bearer sk-1"},
        {"x-api-key": "sk-2", "anthropic-version": "2023-06-01"},
        {"authorization": "Token abc"},
        {"x-goog-api-key": "g", "x-api-key": ""},
    ],
)
def test_the_hash_of_decoded_headers_is_the_gates(headers):
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    assert PLACES.credential_hash(headers) == hashlib.sha256(PLACES.credential(raw)).hexdigest()


def test_no_key_no_hash():
    assert PLACES.credential_hash({"authorization": "Bearer "}) is None
    assert PLACES.credential_hash({}) is None


def test_query_keys_are_taken_out_and_the_rest_kept():
    assert PLACES.without_query_keys(b"alt=sse&key=k&keys=x") == b"alt=sse&keys=x"
    # Google reads $key and percent-encoded names as the same parameter.
    assert PLACES.without_query_keys(b"$key=a&%6Bey=b&%24key=c&x=1") == b"x=1"
    assert PLACES.query_key(b"x=1&%6Bey=k%2D1") == b"k-1"
    assert KeyPlaces(("authorization",)).without_query_keys(b"key=k") == b"key=k"  # no query place


def test_the_gateway_reads_every_declared_place():
    assert KEY_PLACES.names >= {b"authorization", b"x-api-key", b"x-goog-api-key", b"api-key"}
    assert KEY_PLACES.query == ("key",)
