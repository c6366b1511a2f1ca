"""Vertex's other paths are relayed to the Vertex upstream with the same token; with the
gateway's own credentials, tenants share its account, so only routes known to keep nothing
(token counts) go without being shared, as with a server-side key."""

from __future__ import annotations

import httpx
from support.vertex_gateway import CLIENT_TOKEN, start_vertex
from support.vertex_upstream import GEMINI

LOCATED = "/vertex/v1/projects/proj/locations/us-central1"
COUNT = f"{LOCATED}/publishers/google/models/{GEMINI}:countTokens"
CACHES = f"{LOCATED}/cachedContents"
BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
AUTH = {"authorization": f"Bearer {CLIENT_TOKEN}"}


def test_a_token_count_is_relayed_with_the_clients_token(start_vertex):
    started = start_vertex()
    reply = httpx.post(started.url + COUNT, json=BODY, headers=AUTH, timeout=20)
    assert reply.status_code == 200 and reply.json() == {"totalTokens": 7}
    assert started.upstream.tokens == [CLIENT_TOKEN] and started.upstream.paths == [COUNT.removeprefix("/vertex")]


def test_with_gateway_credentials_only_routes_that_keep_nothing_are_relayed(start_vertex):
    started = start_vertex(credentials="gateway")

    counted = httpx.post(started.url + COUNT, json=BODY, timeout=20)
    listed = httpx.get(started.url + CACHES, timeout=20)

    assert counted.status_code == 200 and started.upstream.tokens == ["ya29.gateway-1"]
    error = listed.json()["error"]
    assert listed.status_code == 403 and error["code"] == 403 and error["status"] == "PERMISSION_DENIED"
    assert len(started.upstream.paths) == 1  # the listing never reached the cloud
