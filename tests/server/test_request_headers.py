"""Header values the upstream hop cannot carry: a clear 400 naming the header, the value never
echoed or logged; an empty bearer token is a 401; the gateway's own headers stay here."""

from __future__ import annotations

import json

import httpx
import pytest
from support.process import child_env, free_port, gateway_process
from support.rawhttp import send

from gateway.server.paths import PathGuard, Refusal

from .helpers import wait_for

SECRET = "sk-secret-trailing-123"
CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.fixture
def logged(tmp_path, upstream):
    config = tmp_path / "gw.yaml"
    config.write_text(f"upstream:\n  base_url: {upstream.url}/v1\nlogging:\n  format: json\n")
    port = free_port()
    with gateway_process(
        ["serve", "--config", str(config), "--port", str(port)], port, tmp_path / "stderr.log", env=child_env()
    ) as gw:
        yield gw


@pytest.mark.parametrize(
    "name, value",
    [
        ("Authorization", f"Bearer {SECRET} "),
        ("api-key", f"{SECRET}\t"),
        ("x-api-key", f"{SECRET}  "),
    ],
)
def test_credential_with_trailing_whitespace_is_refused_or_trimmed_never_echoed_or_logged(
    logged, upstream, name, value
):
    """RFC 9110 5.5 excludes the whitespace around a field value from the value. A parser that
    keeps it (uvicorn before 0.55) hands the gateway a value no strict sender forwards: a 400
    naming the header. A parser that strips it hands over the credential itself, which is
    forwarded as received. Either way the key never shows in the reply or the log."""
    response = send(
        logged.url, "POST", "/v1/chat/completions", [("Content-Type", "application/json"), (name, value)], CHAT
    )
    assert SECRET not in response.body.decode()
    if response.status == 400:
        error = response.json()["error"]
        assert error["code"] == "invalid_header" and repr(name.lower()) in error["message"]
        wait_for(lambda: '"invalid_header"' in logged.stderr)
        assert upstream.requests == []
    else:
        assert response.status == 200
        assert upstream.last["headers"][name.lower()] == value.rstrip()
        wait_for(lambda: '"request"' in logged.stderr)
    assert SECRET not in logged.stderr and "Traceback" not in logged.stderr


@pytest.mark.parametrize(
    "value, refused",
    [
        (b"sk-1", False),
        (b"Bearer sk-1", False),
        (b"a\tb", False),
        (b" sk-1", True),
        (b"sk-1 ", True),
        (b"sk-1\t", True),
        (b"\tsk-1", True),
        (b"sk\x00", True),
        (b"sk\x1f1", True),
        (b"sk\x7f", True),
        (b"sk\r\nx: y", True),
    ],
)
def test_path_guard_refuses_header_values_http_cannot_carry(value, refused):
    """The gate itself, whatever the HTTP parser in front of it lets through."""
    scope = {
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "headers": [(b"content-type", b"application/json"), (b"x-api-key", value)],
    }
    result = PathGuard()(scope)
    if refused:
        assert isinstance(result, Refusal) and result.status == 400
        assert result.code == "invalid_header" and "'x-api-key'" in result.message
        assert value.decode("latin-1").strip() not in result.message
    else:
        assert result is scope


def test_control_characters_in_a_header_are_refused(any_gateway, upstream):
    """The HTTP parser itself may refuse these (uvicorn's plain 400); either way no 5xx, no echo."""
    response = send(
        any_gateway,
        "POST",
        "/v1/chat/completions",
        [("Content-Type", "application/json"), ("x-api-key", f"{SECRET}\x01x")],
        CHAT,
    )
    assert response.status == 400 and SECRET not in response.body.decode("latin-1")
    assert upstream.requests == []


def test_empty_bearer_token_is_401_not_502(any_gateway, upstream):
    response = send(
        any_gateway,
        "POST",
        "/v1/chat/completions",
        [("Content-Type", "application/json"), ("Authorization", "Bearer")],
        CHAT,
    )
    assert response.status == 401 and response.json()["error"]["code"] == "invalid_api_key"
    spaced = send(
        any_gateway,
        "POST",
        "/v1/chat/completions",
        [("Content-Type", "application/json"), ("Authorization", "Bearer ")],
        CHAT,
    )
    assert spaced.status in (400, 401)  # some parsers strip the trailing space, some keep it
    assert upstream.requests == []


def test_loopguard_headers_are_not_forwarded(gateway, upstream):
    headers = {
        "x-loopguard-session": "run-1",
        "x-loopguard-agent": "coder",
        "x-loopguard-client": "forged",
        "authorization": "Bearer sk-client",
    }
    assert httpx.post(gateway + "/v1/chat/completions", content=CHAT, headers=headers).status_code == 200
    assert httpx.get(gateway + "/v1/models", headers=headers).status_code == 200
    for seen in upstream.requests:
        assert not [k for k in seen["headers"] if k.startswith("x-loopguard-")]
        assert seen["headers"]["authorization"] == "Bearer sk-client"  # auth off: the client's key
