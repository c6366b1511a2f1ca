"""OpenAI-style error bodies: the one shape every error the gateway itself produces takes.

Clients (the openai SDK included) read ``error.message``/``type``/``param``/``code``; keeping the
shape in one place stops each module from inventing its own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["error_body", "openai_error"]


def error_body(
    message: str, type: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def openai_error(message: str, type: str, code: str | None = None) -> dict[str, Any]:
    """``error_body`` as a protocol's ``Authored.error_body`` (no ``param``)."""
    return error_body(message, type, None, code)
