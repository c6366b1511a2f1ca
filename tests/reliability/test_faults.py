"""Upstream faults: down, slow, reset mid-stream, malformed SSE. Each gets a clear answer (502,
504, a broken stream, the bytes relayed), never a gateway 500, and the gateway serves the next
request normally."""

from __future__ import annotations

import socket

import httpx
import pytest
from server.helpers import gateway_for
from support.upstream import Reply

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def _still_serving(url: str) -> None:
    assert httpx.get(url + "/healthz").status_code == 200


def test_upstream_down_is_502_then_recovers(closed_port):
    with gateway_for(closed_port) as url:
        for stream in (False, True):
            response = httpx.post(url + "/v1/chat/completions", json={**CHAT, "stream": stream})
            assert response.status_code == 502 and response.json()["error"]["type"] == "upstream_error"
        _still_serving(url)


def test_slow_upstream_is_504(make_gateway, upstream):
    url = make_gateway(upstream={"timeout_s": 0.3})
    upstream.queue(Reply(content="late", delay=2))
    response = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=10)
    assert response.status_code == 504
    assert httpx.post(url + "/v1/chat/completions", json=CHAT).status_code == 200


def _dies_mid_stream(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    event = (
        b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
        b'"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":'
        b'{"name":"read_file","arguments":"{\\"pa"}}]},"finish_reason":null}]}\n\n'
    )
    conn.sendall(b"%x\r\n" % len(event) + event + b"\r\n")
    conn.shutdown(socket.SHUT_RDWR)  # reset: no last chunk, no [DONE]


def test_upstream_reset_mid_stream_ends_the_client_stream_with_an_error(raw_upstream):
    with gateway_for(raw_upstream(_dies_mid_stream).url) as url:
        for _ in range(3):
            with httpx.stream(
                "POST", url + "/v1/chat/completions", json={**CHAT, "stream": True, "tools": TOOLS}
            ) as response:
                assert response.status_code == 200
                body = response.read()
            *_, error, done = body.split(b"\n\n")[:-1]
            assert done == b"data: [DONE]" and b'"error"' in error and b"upstream_unavailable" in error
        _still_serving(url)


MALFORMED = [
    [b"data: {not json}\n\n", b"data: [DONE]\n\n"],
    [b'data: {"choices": "x"}\n\n', b"data: [DONE]\n\n"],
    [b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": "{"}}]}}]}\n\n'],
    [b"event: ping\n", b"garbage without a field\n\n", b"data: [DONE]\n\n"],
    [
        b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": null, "function": '
        b'{"name": 7, "arguments": null}}]}, "finish_reason": "tool_calls"}]}\n\n',
        b"data: [DONE]\n\n",
    ],
]


@pytest.mark.parametrize("events", MALFORMED)
def test_malformed_sse_is_relayed_not_a_500(gateway, upstream, events):
    upstream.queue(Reply(raw_stream=events))
    with httpx.stream(
        "POST", gateway + "/v1/chat/completions", json={**CHAT, "stream": True, "tools": TOOLS}
    ) as response:
        assert response.status_code == 200
        try:
            response.read()
        except httpx.RemoteProtocolError:
            pass  # an unfinished upstream stream is relayed unfinished
    assert httpx.post(gateway + "/v1/chat/completions", json=CHAT).status_code == 200
