"""A client that hangs up as soon as it has its stream's terminal event (Codex does, right
after ``response.completed``) still gets its exchange logged: the ``request`` line operators
count requests by is written however the stream ended, with ``ending`` saying how."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest
from support.loop_bodies import CLAUDE_TEXT_END, CLAUDE_TEXT_START
from support.responses_wire import encode, message, stream_events
from support.waiting import wait_for

CHAT_EVENTS = [
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"done"},"finish_reason":null}]}\n\n',
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\n',
    b"data: [DONE]\n\n",
]
ANTHROPIC_EVENTS = CLAUDE_TEXT_START + CLAUDE_TEXT_END
CASES = {
    "responses": (
        "/v1/responses",
        [encode(e) for e in stream_events([message("done")])],
        {"model": "m", "input": "hi", "stream": True},
        b"response.completed",
    ),
    "chat": (
        "/v1/chat/completions",
        CHAT_EVENTS,
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        b"[DONE]",
    ),
    "anthropic": (
        "/v1/messages",
        ANTHROPIC_EVENTS,
        {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "stream": True},
        b"message_stop",
    ),
}


class LingeringUpstream:
    """Sends a whole stream, terminal event included, then keeps the connection open until
    released: the gateway is still reading the upstream when its client hangs up."""

    def __init__(self, events: list[bytes]) -> None:
        self.events = events
        self.released = threading.Event()

    def __call__(self, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for event in self.events:
            conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
        self.released.wait(30)
        conn.sendall(b"0\r\n\r\n")


@pytest.mark.parametrize("case", list(CASES))
def test_a_client_hanging_up_after_the_terminal_event_still_gets_its_request_line(case, raw_upstream, child_gateway):
    path, events, body, terminal = CASES[case]
    upstream = LingeringUpstream(events)
    child = child_gateway(raw_upstream(upstream).url.removesuffix("/v1"))
    try:
        with httpx.stream(
            "POST",
            child.url + path,
            json=body,
            timeout=30,
            headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        ) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if terminal in line.encode():
                    break  # hang up at once, as Codex does
        assert wait_for(lambda: child.events("request"), timeout=30), child.stderr_path.read_text()[-2000:]
    finally:
        upstream.released.set()
    (line,) = child.events("request")
    assert line["path"] == path and line["status"] == 200 and line["stream"] is True
    assert line["ending"] in ("client_closed", "completed")


def test_a_stream_read_to_its_end_is_logged_once_as_completed(raw_upstream, child_gateway):
    path, events, body, _ = CASES["responses"]
    upstream = LingeringUpstream(events)
    upstream.released.set()
    child = child_gateway(raw_upstream(upstream).url.removesuffix("/v1"))
    with httpx.stream("POST", child.url + path, json=body, timeout=30) as response:
        response.read()
    assert wait_for(lambda: child.events("request"), timeout=30)
    (line,) = child.events("request")
    assert line["ending"] == "completed"


def test_a_responses_client_hanging_up_after_completed_can_continue_the_chain(raw_upstream, child_gateway):
    path, events, body, terminal = CASES["responses"]
    upstream = LingeringUpstream(events)
    child = child_gateway(raw_upstream(upstream).url.removesuffix("/v1"))
    try:
        with httpx.stream("POST", child.url + path, json=body, timeout=30) as response:
            for line in response.iter_lines():
                if terminal in line.encode():
                    break
        assert wait_for(lambda: child.events("request"), timeout=30)
    finally:
        upstream.released.set()
    with httpx.stream(
        "POST", child.url + path, json={**body, "previous_response_id": "resp_1"}, timeout=30
    ) as response:
        response.read()
    assert wait_for(lambda: len(child.events("request")) == 2, timeout=30)
    assert child.events("chain_unknown") == []
