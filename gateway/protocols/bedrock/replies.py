"""What the gateway writes itself on Bedrock's routes: Anthropic messages (an InvokeModel body is
the Messages API's), framed when streamed, and errors in Bedrock's shape.

Bedrock answers an error with ``{"message": ...}`` and names it by its exception type (the
``x-amzn-ErrorType`` header; ``__type`` in the body, which botocore and the AWS SDKs read when
the header is absent); the Anthropic SDKs pick their exception class by the status. Mid-stream,
an error is an exception frame of that type.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.anthropic import answers
from gateway.protocols.anthropic import replies as anthropic
from gateway.protocols.base import Answer
from gateway.protocols.bedrock import frames
from gateway.protocols.errors import HeadedError

__all__ = ["error_body", "error_event", "error_type"]

_EXCEPTION = "Exception"
VALIDATION = "ValidationException"
# The gateway's own error names (a code first, then a type) in Bedrock's words.
_OWN = {
    "request_too_large": VALIDATION,
    "loop_detected": VALIDATION,
    "invalid_request_error": VALIDATION,
    "authentication_error": "UnrecognizedClientException",
    "invalid_api_key": "UnrecognizedClientException",
    "permission_error": "AccessDeniedException",
    "not_shared": "AccessDeniedException",
    "not_found": "ResourceNotFoundException",
    "not_found_error": "ResourceNotFoundException",
    "rate_limit_error": "ThrottlingException",
    "upstream_timeout": "ModelTimeoutException",
    "upstream_unavailable": "ServiceUnavailableException",
    "upstream_unsigned": "AccessDeniedException",
    "upstream_invalid_response": "InternalServerException",
    "upstream_error": "ServiceUnavailableException",
}


def error_type(type: str, code: str | None = None) -> str:
    """Bedrock's exception name for an error the gateway answers (a Bedrock name is kept)."""
    if type.endswith(_EXCEPTION):
        return type
    return _OWN.get(code or "") or _OWN.get(type) or VALIDATION


def error_body(message: str, type: str = VALIDATION, code: str | None = None) -> dict[str, Any]:
    name = error_type(type, code)
    return HeadedError({"message": message, "__type": name}, ((b"x-amzn-errortype", name.encode("latin-1")),))


def error_event(body: dict[str, Any]) -> bytes:
    """An error body as the exception frame that ends a stream."""
    name = body.get("__type")
    message = body.get("message")
    return frames.exception(name if isinstance(name, str) else VALIDATION, message if isinstance(message, str) else "")


def termination_stream(text: str, model: str) -> list[bytes]:
    return [frames.chunk(_data(event)) for event in anthropic.termination_stream(text, model)]


def _data(event: bytes) -> bytes:
    """The JSON of one Anthropic SSE event the gateway wrote (``event: x\\ndata: {...}\\n\\n``)."""
    return event.partition(b"\ndata: ")[2].rstrip(b"\n")


def stream_answer(stream: bytes) -> Answer | None:
    return answers.stream_answer(frames.as_events(stream))


def stream_prepend_text(stream: bytes, text: str) -> bytes:
    return frames.as_frames(answers.stream_prepend_text(frames.as_events(stream), text))
