"""Client authentication: without a configured key the gateway is not an open relay."""

from __future__ import annotations

import hashlib

import httpx
import openai
import pytest

from gateway.config import load_config

KEY, OTHER, OPS = "lg-client-1", "lg-client-2", "lg-ops"
SERVER_KEY = "sk-server-side"
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def locked(make_gateway):
    return make_gateway(
        upstream={"api_key": SERVER_KEY},
        auth={"keys": [KEY, "sha256:" + hashlib.sha256(OTHER.encode()).hexdigest()], "metrics_keys": [OPS]},
    )


def client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=10)


def test_missing_or_wrong_key_is_401_and_nothing_reaches_the_upstream(locked, upstream):
    with pytest.raises(openai.AuthenticationError) as wrong:
        client(locked, "sk-stolen").chat.completions.create(**CHAT)
    assert wrong.value.status_code == 401 and wrong.value.code == "invalid_api_key"
    missing = httpx.post(locked + "/v1/chat/completions", json=CHAT)
    assert missing.status_code == 401 and missing.json()["error"]["type"] == "invalid_request_error"
    assert httpx.get(locked + "/v1/models").status_code == 401  # every relayed route, not only chat
    assert upstream.requests == []


def test_a_valid_key_is_not_forwarded_the_server_key_is(locked, upstream):
    reply = client(locked, KEY).chat.completions.create(**CHAT)
    assert reply.choices[0].message.content == "ok"
    # A key given as sha256:<hex>, sent as x-api-key.
    assert httpx.get(locked + "/v1/models", headers={"x-api-key": OTHER}).status_code == 200
    for seen in upstream.requests:
        assert seen["headers"]["authorization"] == f"Bearer {SERVER_KEY}"
        assert "x-api-key" not in seen["headers"]
        assert not [k for k in seen["headers"] if k.startswith("x-loopguard-")]


def test_anthropic_routes_get_anthropic_shaped_401(locked):
    response = httpx.post(
        locked + "/v1/messages",
        json={"model": "m", "max_tokens": 5, "messages": []},
        headers={"x-api-key": "sk-ant-wrong", "anthropic-version": "2023-06-01"},
    )
    assert response.status_code == 401
    assert response.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": response.json()["error"]["message"]},
    }


def test_metrics_and_readyz_need_the_operator_key_healthz_stays_open(locked):
    for path in ("/metrics", "/readyz"):
        assert httpx.get(locked + path).status_code == 401
        assert httpx.get(locked + path, headers={"authorization": f"Bearer {KEY}"}).status_code == 401
        assert httpx.get(locked + path, headers={"authorization": f"Bearer {OPS}"}).status_code == 200
    assert httpx.get(locked + "/healthz").status_code == 200


@pytest.mark.parametrize("name", ["key", "api_key", "x-api-key"])
def test_an_operator_key_in_the_query_string_is_refused(locked, name):
    """Only in a header: a query string is written to proxies', scrapers' and browsers' logs."""
    for path in ("/metrics", "/readyz"):
        assert httpx.get(locked + path, params={name: OPS}).status_code == 401, path
        assert httpx.get(locked + path, headers={"x-api-key": OPS}).status_code == 200, path


def test_operator_routes_share_the_client_keys_by_default(make_gateway):
    url = make_gateway(auth={"keys": [KEY]})
    assert httpx.get(url + "/readyz").status_code == 401
    assert httpx.get(url + "/readyz", headers={"authorization": f"Bearer {KEY}"}).status_code == 200


def test_keys_come_from_the_environment_and_an_unset_one_is_an_error(tmp_path):
    path = tmp_path / "gw.yaml"
    path.write_text("auth:\n  keys: ['${LG_KEY}']\n")
    assert load_config(path, env={"LG_KEY": "from-env"}).auth.keys == ("from-env",)
    with pytest.raises(ValueError, match="auth.keys"):
        load_config(path, env={})
    path.write_text("auth:\n  keys: ['sha256:abc']\n")
    with pytest.raises(ValueError, match="64 hex"):
        load_config(path, env={})
