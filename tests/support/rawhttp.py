"""HTTP/1.1 over a bare socket: for requests client libraries would "fix" before sending
(paths with ``..`` or ``//``, header values with trailing spaces, bodies that never finish)."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


def connect(base_url: str, timeout: float = 10.0) -> socket.socket:
    url = urlsplit(base_url)
    return socket.create_connection((url.hostname, url.port), timeout=timeout)


def request_bytes(method: str, target: str, headers: list[tuple[str, str]] = (), body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: gateway", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def send(
    base_url: str,
    method: str,
    target: str,
    headers: list[tuple[str, str]] = (),
    body: bytes = b"",
    timeout: float = 10.0,
) -> RawResponse:
    with connect(base_url, timeout) as sock:
        sock.sendall(request_bytes(method, target, headers, body))
        return read_response(sock)


def read_response(sock: socket.socket) -> RawResponse:
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    while head.startswith(b"HTTP/1.1 1"):  # an interim response (100 Continue): the answer follows
        head, _, body = body.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = _dechunk(body)
    return RawResponse(status, headers, body)


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return out
