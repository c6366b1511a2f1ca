"""Reading request bodies within the configured limit."""

from __future__ import annotations

from starlette.requests import Request


class BodyTooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge  # refuse before reading a byte of it
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


class BodyTimeout(Exception):
    """The client did not finish sending its body within ``limits.body_timeout_s``."""


def too_many_items(items: object, limit: int) -> str | None:
    """Why a request with more than ``limit`` conversation items (``limits.max_messages``) is
    refused, or None. Judging a history costs time in proportion to its length on the shared
    event loop: one 100,000-message body would stall every other request for over a second."""
    if isinstance(items, list) and len(items) > limit:
        return f"The request has {len(items)} messages; this gateway accepts at most {limit} (limits.max_messages)."
    return None
