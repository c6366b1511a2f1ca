"""OpenAI-style error bodies: the one shape every error the gateway itself produces takes.

Clients (the openai SDK included) read ``error.message``/``type``/``param``/``code``; keeping the
shape in one place stops each module from inventing its own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HeadedError", "error_body", "error_headers", "openai_error"]


class HeadedError(dict[str, Any]):
    """An error body whose protocol's clients also read the error from response headers
    (Bedrock's ``x-amzn-ErrorType``): the body as any error body, plus ``headers``, which the
    code writing the response sends with it."""

    headers: tuple[tuple[bytes, bytes], ...] = ()

    def __init__(self, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...]) -> None:
        super().__init__(body)
        self.headers = headers


def error_headers(body: Any) -> tuple[tuple[bytes, bytes], ...]:
    """The response headers an error body carries (``HeadedError``); none for the others."""
    return body.headers if isinstance(body, HeadedError) else ()


def error_body(
    message: str, type: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def openai_error(message: str, type: str, code: str | None = None) -> dict[str, Any]:
    """``error_body`` as a protocol's ``Authored.error_body`` (no ``param``)."""
    return error_body(message, type, None, code)
