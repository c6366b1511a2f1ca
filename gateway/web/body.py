"""Reading request bodies within the configured limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import ClientDisconnect


class BodyTooLarge(Exception):
    pass


class BodyTimeout(Exception):
    """The client did not finish sending its body within ``limits.body_timeout_s``."""


async def read_body(scope: Mapping[str, Any], receive: Any, limit: int) -> bytes:
    """The whole body from the ASGI ``receive``; ``ClientDisconnect`` if the client left first."""
    declared = _content_length(scope["headers"])
    if declared is not None and declared > limit:
        raise BodyTooLarge  # refuse before reading a byte of it
    first = True
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        if not message.get("more_body", False):
            if first:  # the usual case, one message: no copy
                return chunk
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)
        first = False


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def too_many_items(items: object, limit: int) -> str | None:
    """Why a request with more than ``limit`` conversation items (``limits.max_messages``) is
    refused, or None. Judging a history costs time in proportion to its length on the shared
    event loop: one 100,000-message body would stall every other request for over a second."""
    if isinstance(items, list) and len(items) > limit:
        return f"The request has {len(items)} messages; this gateway accepts at most {limit} (limits.max_messages)."
    return None
