"""Logs as operators get them: JSON lines from the real process, one per request, no secrets."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from support.process import child_env, free_port, gateway_process
from support.upstream import Reply

SECRET = "sk-secret-123"
FIELDS = {"method", "path", "status", "upstream_ms", "overhead_ms", "stream", "action"}


@pytest.fixture
def logged_gateway(tmp_path, upstream):
    config = tmp_path / "gw.yaml"
    config.write_text(
        f"upstream:\n  base_url: {upstream.url}/v1\n  timeout_s: 1\nlogging:\n  format: json\n  level: info\n"
    )
    port = free_port()
    with gateway_process(
        ["serve", "--config", str(config), "--port", str(port)], port, tmp_path / "stderr.log", env=child_env()
    ) as gw:
        yield gw


def _json_lines(text: str) -> list[dict]:
    lines = []
    for line in text.splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


def _request_lines(gw, path: str, expected: int = 1) -> list[dict]:
    # The stream's line may be written as the stream ends: poll briefly rather than sleep.
    from .helpers import wait_for

    wait_for(
        lambda: (
            len([e for e in _json_lines(gw.stderr) if e.get("path") == path and e.get("event") == "request"])
            >= expected
        )
    )
    return [e for e in _json_lines(gw.stderr) if e.get("path") == path and e.get("event") == "request"]


SECRET_HEADERS = {
    "authorization": f"Bearer {SECRET}",
    "api-key": SECRET,
    "x-api-key": SECRET,
    "proxy-authorization": f"Bearer {SECRET}",
}


def test_authorization_never_logged_and_one_json_line_per_chat_request(logged_gateway, upstream):
    gw = logged_gateway
    upstream.queue(Reply(content="a"), Reply(content="b"))
    assert (
        httpx.post(
            gw.url + "/v1/chat/completions", json={"model": "m", "messages": []}, headers=SECRET_HEADERS
        ).status_code
        == 200
    )
    assert (
        httpx.post(
            gw.url + "/chat/completions", json={"model": "m", "messages": [], "stream": True}, headers=SECRET_HEADERS
        ).status_code
        == 200
    )

    (unary,) = _request_lines(gw, "/v1/chat/completions")
    (streamed,) = _request_lines(gw, "/chat/completions")
    for line, stream in ((unary, False), (streamed, True)):
        assert set(line) >= FIELDS, FIELDS - set(line)
        assert (line["method"], line["status"], line["stream"], line["action"]) == ("POST", 200, stream, "pass")
        assert isinstance(line["upstream_ms"], (int, float)) and isinstance(line["overhead_ms"], (int, float))
        assert line["overhead_ms"] >= 0 and line["upstream_ms"] >= 0
    assert SECRET not in gw.stderr
    assert upstream.last["headers"]["authorization"] == f"Bearer {SECRET}"  # forwarded, just not logged


def test_every_log_line_is_json(logged_gateway, upstream):
    gw = logged_gateway
    httpx.post(gw.url + "/v1/chat/completions", json={"model": "m", "messages": []}, headers=SECRET_HEADERS)
    httpx.get(gw.url + "/v1/models", headers=SECRET_HEADERS)
    _request_lines(gw, "/v1/models")
    lines = [line for line in gw.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("{") for line in lines), lines
    assert SECRET not in gw.stderr


@pytest.mark.parametrize(
    "method, path, body, status",
    [
        ("GET", "/v1/models", None, 200),
        ("POST", "/v1/chat/completions", b"{not json", 400),
    ],
)
def test_other_requests_logged_without_secrets(logged_gateway, upstream, method, path, body, status):
    gw = logged_gateway
    response = httpx.request(method, gw.url + path, content=body, headers=SECRET_HEADERS)
    assert response.status_code == status
    (line,) = _request_lines(gw, path)
    assert (line["method"], line["status"]) == (method, status)
    assert SECRET not in gw.stderr


def test_upstream_failure_logged_without_secrets(logged_gateway, upstream):
    gw = logged_gateway
    upstream.queue(Reply(delay=2))  # beyond timeout_s: 1
    response = httpx.post(
        gw.url + "/v1/chat/completions", json={"model": "m", "messages": []}, headers=SECRET_HEADERS, timeout=10
    )
    assert response.status_code == 504
    (line,) = _request_lines(gw, "/v1/chat/completions")
    assert line["status"] == 504
    assert SECRET not in gw.stderr


@pytest.mark.parametrize(
    "method, path, status",
    [
        ("GET", "/v1/responses/resp_of_another_tenant", 404),
        ("DELETE", "/v1/files/file_of_another_tenant", 404),
        ("GET", "/v1/files", 403),
    ],
)
def test_a_refused_stored_object_request_logs_its_own_overhead(tmp_path, upstream, method, path, status):
    """Not the process's age: the gateway's time on the request fits inside the client's wait."""
    config = tmp_path / "gw.yaml"
    config.write_text(
        f"upstream:\n  base_url: {upstream.url}/v1\n  api_key: sk-server\n"
        "auth:\n  keys:\n    - {key: sk-b, tenant: b}\nlogging:\n  format: json\n  level: info\n"
    )
    port = free_port()
    with gateway_process(
        ["serve", "--config", str(config), "--port", str(port)], port, tmp_path / "stderr.log", env=child_env()
    ) as gw:
        began = time.perf_counter()
        response = httpx.request(method, gw.url + path, headers={"authorization": "Bearer sk-b"})
        waited_ms = (time.perf_counter() - began) * 1000
        assert response.status_code == status
        (line,) = _request_lines(gw, path)
    assert line["status"] == status and line["upstream_ms"] == 0.0
    assert 0 <= line["overhead_ms"] <= waited_ms
    assert upstream.requests == []
