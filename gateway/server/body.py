"""Reading request bodies within the configured limit."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.server.responses import openai_error


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


def too_many_messages(payload: dict[str, Any], limit: int) -> Response | None:
    """The 400 for a body with more than ``limit`` messages, or None. Judging a history costs
    time in proportion to its length on the shared event loop: one 100,000-message body would
    stall every other request for over a second."""
    messages = payload.get("messages")
    if isinstance(messages, list) and len(messages) > limit:
        return openai_error(400, f"The request has {len(messages)} messages; this gateway accepts at most "
                            f"{limit} (limits.max_messages).", code="too_many_messages", param="messages")
    return None
