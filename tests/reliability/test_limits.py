"""Limits that keep one process serving under hostile or broken peers: slow headers, too many
connections, too many body bytes at once, and upstream timeouts as documented. Each through a
child gateway (``python -m gateway serve``), as operators run it."""

from __future__ import annotations

import json
import re
import socket
import time

import httpx
from support.rawhttp import connect, read_response, request_bytes
from support.upstream import Reply
from support.waiting import wait_for

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _healthy(url: str) -> bool:
    return httpx.get(url + "/healthz", timeout=10).status_code == 200


def test_slow_headers_and_silent_connections_are_cut_with_408(upstream, child_gateway):
    child = child_gateway(upstream.url, limits={"header_timeout_s": 1})
    silent = [connect(child.url, timeout=30) for _ in range(20)]  # connect, send nothing
    trickling = [connect(child.url, timeout=30) for _ in range(20)]
    for sock in trickling:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: g\r\n")  # headers never complete
    assert httpx.post(child.url + "/v1/chat/completions", json=CHAT, timeout=10).status_code == 200
    for sock in silent + trickling:
        assert read_response(sock).status == 408  # a socket left open would time out here instead
        sock.close()
    assert _healthy(child.url)


def test_a_connection_beyond_the_cap_is_refused_at_once(upstream, child_gateway):
    child = child_gateway(upstream.url, limits={"max_connections": 20, "header_timeout_s": 60})
    held = [connect(child.url, timeout=30) for _ in range(20)]
    extra = connect(child.url, timeout=30)
    response = read_response(extra)
    assert response.status == 503 and b"max_connections" in response.body
    for sock in held:
        sock.close()
    assert wait_for(lambda: _healthy(child.url), timeout=20)


def _metric(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1)) if found else -1.0


def _body(size: int) -> bytes:
    body = json.dumps({**CHAT, "messages": [{"role": "user", "content": "x" * size}]}).encode()
    return body


def test_bytes_in_flight_are_bounded_and_refused_cleanly(upstream, child_gateway):
    child = child_gateway(upstream.url, limits={"max_inflight_bytes": 1_000_000})
    body = _body(400_000)
    holding = []
    for _ in range(2):  # two bodies announced, half sent: 2 x ~400 KB held
        sock = connect(child.url, timeout=30)
        sock.sendall(
            request_bytes("POST", "/v1/chat/completions", [("Content-Type", "application/json")], body)[:-1000]
        )
        holding.append(sock)
    assert wait_for(lambda: _metric(child.url, "loopguard_inflight_body_bytes") >= 2 * len(body), timeout=20)
    refused = httpx.post(
        child.url + "/v1/chat/completions", content=body, timeout=10, headers={"content-type": "application/json"}
    )
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "overloaded"
    for sock in holding:
        sock.sendall(body[-1000:])
        assert read_response(sock).status == 200
        sock.close()
    assert wait_for(lambda: _metric(child.url, "loopguard_inflight_body_bytes") == 0, timeout=20)
    assert (
        httpx.post(
            child.url + "/v1/chat/completions", content=body, timeout=10, headers={"content-type": "application/json"}
        ).status_code
        == 200
    )


def _trickling_json(conn: socket.socket) -> None:
    """Headers at once, then the body a byte at a time: each read is quick, the whole is not."""
    body = json.dumps({"id": "c", "object": "chat.completion", "choices": []}).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body))
    for byte in body:
        conn.sendall(bytes([byte]))
        time.sleep(0.2)


def test_a_json_answer_is_bounded_whole_not_per_read(raw_upstream, child_gateway):
    upstream = raw_upstream(_trickling_json)
    child = child_gateway(upstream.url[:-3], upstream={"timeout_s": 1})
    response = httpx.post(child.url + "/v1/chat/completions", json=CHAT, timeout=30)
    assert response.status_code == 504 and response.json()["error"]["type"] == "upstream_error"


def test_a_stream_longer_than_the_timeout_is_not_cut_while_it_flows(upstream, child_gateway):
    child = child_gateway(upstream.url, upstream={"timeout_s": 1, "stream_idle_timeout_s": 2})
    upstream.queue(Reply(content="a" * 40, chunk_delay=0.25))  # ~2.5 s in all, never silent for long
    with httpx.stream(
        "POST", child.url + "/v1/chat/completions", json={**CHAT, "stream": True}, timeout=30
    ) as response:
        body = response.read()
    text = "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        for line in body.decode().splitlines()
        if line.startswith("data: {")
    )
    assert text == "a" * 40 and body.endswith(b"data: [DONE]\n\n")
