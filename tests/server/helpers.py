"""Clients, assertions and odd upstreams shared by the transport tests.

Everything talks to real servers over loopback: the gateway under test will be rebuilt inside
(the loop-guard pipeline lands in chat.py later), so tests only observe the wire.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import openai
from support.servers import serve
from support.waiting import wait_for

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app

API_KEY = "sk-client-test"
TRANSPORT = "aiohttp"  # the upstream client ``gateway_for`` uses; the ``transport`` fixture sets it


def sdk(base_url: str, **kwargs) -> openai.OpenAI:
    # No retries: a 5xx must surface once, as the gateway sent it.
    return openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, timeout=10, **kwargs)


def async_sdk(base_url: str, **kwargs) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, timeout=10, **kwargs)


def error_shape(response: httpx.Response) -> dict:
    """Assert the OpenAI error envelope (what SDKs parse) and no internals leaked; return it."""
    assert response.headers["content-type"].startswith("application/json")
    text = response.text
    assert "Traceback" not in text and 'File "' not in text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) >= {"message", "type", "param", "code"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["type"], str) and body["error"]["type"]
    return body["error"]


@contextmanager
def gateway_for(base_url: str, **overrides) -> Iterator[str]:
    """A gateway in front of an arbitrary upstream base URL (a closed port, a raw socket)."""
    raw = {"upstream": {"base_url": base_url, "transport": TRANSPORT}, **overrides}
    with serve(build_app(Config.model_validate(raw)), http="httptools", **SERVER_OPTIONS) as url:
        yield url


class RawUpstream:
    """A socket server answering each connection with ``handler(conn)``: for upstreams that
    misbehave below HTTP (reset at once, die mid-stream), which no ASGI app can do."""

    def __init__(self, handler: Callable[[socket.socket], None]) -> None:
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._handler = handler
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            _read_request(conn)
            self._handler(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._sock.close()


def _read_request(conn: socket.socket) -> None:
    """The whole request, head and ``content-length`` body: a socket closed with bytes unread
    sends a reset, which would race the clean end a handler writes (a truncated stream read as a
    broken one)."""
    data = b""
    while b"\r\n\r\n" not in data and (chunk := conn.recv(1 << 16)):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    while len(body) < length and (chunk := conn.recv(1 << 16)):
        body += chunk
