"""Path spellings: one canonical path per route, everything ambiguous refused before routing.

Sent over bare sockets: client libraries normalise ``..`` and ``//`` themselves, so they could
not send what an attacker (or a sloppy client) sends."""

from __future__ import annotations

import json

import pytest
from support.rawhttp import send

from gateway.server.paths import PathError, canonical_path

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.mark.parametrize(
    "target",
    [
        "/v1/../admin/keys",
        "/v1/%2e%2e/admin",
        "/v1/%2E%2E/admin",
        "/v1//chat/completions",
        "/v1/./chat/completions",
        "/v1/chat/../chat/completions",
        "/v1/chat%2fcompletions",
        "/v1/chat%5ccompletions",
        "/v1\\chat\\completions",
        "/v1/models%00",
        "/v1/%zz",
        "/v1/models//",
        "/v1/..",
        "/v1/.%2e/admin",
    ],
)
def test_ambiguous_paths_are_refused_and_never_reach_the_upstream(any_gateway, upstream, target):
    for method, body in (("GET", b""), ("POST", CHAT)):
        response = send(any_gateway, method, target, [("Content-Type", "application/json")], body)
        assert response.status == 400, (target, response.status, response.body)
        error = response.json()["error"]
        assert error["code"] == "invalid_path" and error["type"] == "invalid_request_error"
    assert upstream.requests == []


@pytest.mark.parametrize(
    "target",
    [
        "/v1/chat/completions/",
        "/v1/chat/%63ompletions",
        "/v1/%63hat/completions",
        "/chat/completions/",
    ],
)
def test_other_spellings_of_the_chat_route_are_judged_as_the_chat_route(any_gateway, upstream, target):
    """The guard answers (its action header is set) and the upstream sees the canonical path."""
    response = send(any_gateway, "POST", target, [("Content-Type", "application/json")], CHAT)
    assert response.status == 200, response.body
    assert response.headers["x-loopguard-action"] == "pass"
    assert upstream.last["path"] == "/v1/chat/completions"


def test_passthrough_keeps_other_escapes_and_queries(any_gateway, upstream):
    response = send(any_gateway, "GET", "/v1/files/file%3Aabc/content?limit=2")
    assert response.status == 200
    assert upstream.last["path"] == "/v1/files/file:abc/content" and upstream.last["query"] == b"limit=2"


def test_canonical_path_rules():
    assert canonical_path(b"/v1/chat/%63ompletions/") == b"/v1/chat/completions"
    assert canonical_path(b"/v1/files/a%3ab") == b"/v1/files/a%3Ab"
    assert canonical_path(b"/") == b"/"
    # A byte no path carries as it is is encoded; a lone %25 (no hex after it) is a percent sign.
    assert canonical_path(b'/a/"{|}^`[]\xc3\xa9 ') == b"/a/%22%7B%7C%7D%5E%60%5B%5D%C3%A9%20"
    assert canonical_path(b"/a/100%25/b%25zz") == b"/a/100%25/b%25zz"
    assert canonical_path(b"/bedrock/model/a%2fb/invoke", slashes=True) == b"/bedrock/model/a%2Fb/invoke"
    for bad in (
        b"/a//b",
        b"//",
        b"/a/./b",
        b"/a/%2E",
        b"/a%2F",
        b"a/b",
        b"/a%",
        b"/a%3Fb",  # decoded, a query would start
        b"/a%3fb",
        b"/a%23b",
        b"/a#b",  # a fragment: a URL library would cut it off
        b"/a/%2563",  # encoded twice: c to whoever decodes once more
        b"/a/%253a",
        b"/a/%25%33%46",  # %25 then %3F: refused for the %3F
        b"/a/\x01",
        b"/bedrock/model/a%2F%2Fb/invoke",
    ):
        with pytest.raises(PathError):
            canonical_path(bad, slashes=bad.startswith(b"/bedrock/"))


@pytest.mark.parametrize(
    "target",
    [
        "/v1/v1/chat/completions",
        "/v1/;/chat/completions",
        "/v1/%3B/chat/completions",
        "/v1/chat/completions;x",
        "/V1/Chat/Completions",
        "/v1/CHAT/completions",
        "/v1/chat/completions.",
        "/v1/v1/responses",
        "/v1/v1/messages",
        "/v1/chat;a=b/completions",
        "/v1/v1/v1/chat/completions",
    ],
)
def test_a_spelling_some_upstream_routes_to_a_guarded_endpoint_is_refused(any_gateway, upstream, target):
    """A base URL without /v1 makes /v1/v1/chat/completions the upstream's chat route, routers that
    drop ;parameters or fold case do the same with the others: relayed, they would go unjudged."""
    for method, body in (("GET", b""), ("POST", CHAT)):
        response = send(any_gateway, method, target, [("Content-Type", "application/json")], body)
        assert response.status == 400, (target, method, response.status, response.body)
        assert response.json()["error"]["code"] == "invalid_path"
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("target", "method"),
    [
        ("/v1/chat/completions", "PUT"),
        ("/v1/chat/completions", "PATCH"),
        ("/v1/chat/completions", "DELETE"),
        ("/chat/completions", "PUT"),
        ("/v1/responses", "GET"),
        ("/v1/responses", "PATCH"),
        ("/responses", "PUT"),
        ("/v1/messages", "GET"),
        ("/v1/messages", "PUT"),
        ("/v1/chat/completions", "HEAD"),
    ],
)
def test_methods_the_protocol_does_not_define_on_a_guarded_path_get_405(any_gateway, upstream, target, method):
    response = send(any_gateway, method, target, [("Content-Type", "application/json")], CHAT)
    assert response.status == 405, (target, method, response.status, response.body)
    assert "POST" in response.headers["allow"]
    if method != "HEAD":
        body = response.json()
        error = body["error"]
        assert error["type"] == "invalid_request_error"
        assert (body.get("type") == "error") == target.endswith("messages")  # Anthropic's shape there
    assert upstream.requests == []


def test_methods_the_protocol_defines_are_relayed(any_gateway, upstream):
    """Listing stored chat completions is GET /v1/chat/completions; a response is read and deleted
    at /v1/responses/{id}."""
    assert send(any_gateway, "GET", "/v1/chat/completions?limit=2").status == 200
    assert send(any_gateway, "GET", "/v1/responses/resp_1").status == 200
    assert send(any_gateway, "DELETE", "/v1/responses/resp_1").status == 200
    assert [r["path"] for r in upstream.requests] == [
        "/v1/chat/completions",
        "/v1/responses/resp_1",
        "/v1/responses/resp_1",
    ]
