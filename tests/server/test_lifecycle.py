"""Clients that leave early and bodies that never finish."""

from __future__ import annotations

import json

import pytest
from support.patient import PatientUpstream
from support.process import child_env, free_port, gateway_process
from support.rawhttp import connect, read_response, request_bytes
from support.servers import serve

from .helpers import gateway_for, wait_for

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.fixture
def patient():
    upstream = PatientUpstream(delay=20)
    with serve(upstream.app) as url:
        upstream.url = url
        yield upstream


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
def test_a_client_leaving_a_non_streaming_request_cancels_the_upstream_request(patient, path):
    with gateway_for(patient.url + "/v1") as url:
        for _ in range(5):
            count = patient.started  # before sending: a fast hop may reach the upstream at once
            sock = connect(url)
            sock.sendall(request_bytes("POST", path, [("Content-Type", "application/json")], CHAT))
            assert wait_for(lambda: patient.started == count + 1)
            sock.close()  # the client gives up while the model is still "generating"
        assert wait_for(lambda: patient.abandoned == 5), (patient.abandoned, patient.answered)


@pytest.fixture
def logged(tmp_path, patient):
    config = tmp_path / "gw.yaml"
    config.write_text(
        f"upstream:\n  base_url: {patient.url}/v1\nlimits:\n  body_timeout_s: 1\nlogging:\n  format: json\n"
    )
    port = free_port()
    with gateway_process(
        ["serve", "--config", str(config), "--port", str(port)], port, tmp_path / "stderr.log", env=child_env()
    ) as gw:
        yield gw


def _lines(gw) -> list[dict]:
    return [json.loads(line) for line in gw.stderr.splitlines() if line.startswith("{")]


def test_disconnects_are_logged_as_499_without_a_traceback(logged, patient):
    sock = connect(logged.url)  # leaves mid-body
    sock.sendall(request_bytes("POST", "/v1/chat/completions", [("Content-Type", "application/json")], CHAT)[:-10])
    sock.close()
    sock = connect(logged.url)  # leaves while the upstream works
    sock.sendall(request_bytes("POST", "/v1/chat/completions", [("Content-Type", "application/json")], CHAT))
    assert wait_for(lambda: patient.started == 1)
    sock.close()
    assert wait_for(lambda: len([e for e in _lines(logged) if e.get("status") == 499]) == 2)
    assert "Traceback" not in logged.stderr
    assert not [e for e in _lines(logged) if e.get("status") == 500 or e.get("level") == "error"]


def test_a_body_slower_than_the_timeout_gets_408_and_the_connection_closed(logged, patient):
    sock = connect(logged.url)
    request = request_bytes("POST", "/v1/chat/completions", [("Content-Type", "application/json")], CHAT)
    sock.sendall(request[:-5])  # never finishes; the timeout is 1 s
    response = read_response(sock)  # returns once the gateway closes the connection
    sock.close()
    assert response.status == 408 and response.json()["error"]["code"] == "request_timeout"
    assert patient.started == 0
