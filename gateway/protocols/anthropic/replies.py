"""Reading a Messages reply, and the replies and errors the gateway writes itself.

A termination reply must look like any model answer to the agent (a valid ``message`` with
``stop_reason: end_turn``, or a complete event stream), so its loop ends gracefully instead of on
an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols.adapters import model_named
from gateway.protocols.anthropic import events
from gateway.protocols.anthropic.answers import answer, prepend_text
from gateway.protocols.anthropic.parse import call_of, text_of
from gateway.protocols.anthropic.tokens import output_tokens
from gateway.protocols.roles.authored import Authored
from gateway.protocols.roles.replies import Replies
from gateway.trace.model import ToolCall
from gateway.wire import codec

# Anthropic's error type for each status (its documented error shapes); the SDK picks its
# exception class by status and reads the type from the body.
_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_TYPES = frozenset(_BY_STATUS.values())
# The gateway's own error names (type or code) in Anthropic's words.
_OWN = {
    "request_too_large": "request_too_large",
    "upstream_timeout": "timeout_error",
    "upstream_unavailable": "api_error",
    "upstream_error": "api_error",
}


def proposed_calls(reply: Any) -> tuple[ToolCall, ...]:
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(content, list):
        return ()
    return tuple(call for block in content if (call := call_of(block)) is not None)


def keep_calls(reply: dict[str, Any], count: int) -> dict[str, Any]:
    """Only the first ``count`` tool_use blocks stay (every other block too); with none left the
    turn ends normally instead of waiting for results that will never come."""
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(content, list):
        return reply
    kept: list[Any] = []
    seen = 0
    for block in content:
        if call_of(block) is not None:
            seen += 1
            if seen > count:
                continue
        kept.append(block)
    out = {**reply, "content": kept}
    if count <= 0 and reply.get("stop_reason") == "tool_use":
        out["stop_reason"] = "end_turn"
    return out


def reply_text(reply: Any) -> str:
    return text_of(reply.get("content")) if isinstance(reply, dict) else ""


def termination_message(text: str, model: str) -> dict[str, Any]:
    return {
        "id": events.new_message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": events.zero_usage(),
    }


def termination_stream(text: str, model: str) -> list[bytes]:
    return [
        events.message_start(events.new_message_id(), model, events.zero_usage()),
        *events.text_block(0, text),
        *events.message_end("end_turn", {"output_tokens": 0}),
    ]


def error_type(status: int) -> str:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return "invalid_request_error" if status < 500 else "api_error"


def error_body(
    message: str, type: str = "invalid_request_error", code: str | None = None, status: int | None = None
) -> dict[str, Any]:
    """Anthropic's error shape. An Anthropic type name is kept; the gateway's own names (a
    refused loop, an unreachable upstream, a body over the limit) are put in Anthropic's words,
    by ``status`` when it is known."""
    if type in _TYPES:
        kind = type
    elif status is not None:
        kind = error_type(status)
    else:
        kind = _OWN.get(code or "") or _OWN.get(type) or "invalid_request_error"
    error: dict[str, Any] = {"type": kind, "message": message}
    if code in THREAD_CODES:  # the SDK reads it there: a lost thread is sent again whole
        error["details"] = {"error_code": code}
    return {"type": "error", "error": error}


# Thread errors the anthropic SDK recovers from by sending the whole history as a new thread.
THREAD_CODES = frozenset({"thread_not_found", "thread_already_continued"})


def error_event(body: dict[str, Any]) -> bytes:
    """An error body as a stream event (the SDK raises it from the stream)."""
    return events.event(body if body.get("type") == "error" else {**body, "type": "error"})


# --- the roles: a message has no alternatives, so one answer --------------------------------


def proposed(reply: Any) -> list[tuple[ToolCall, ...]]:
    """``proposed_calls`` as the one answer's calls."""
    return [proposed_calls(reply)]


def kept(reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
    """``keep_calls`` for the one answer (no count: the reply as it is)."""
    return keep_calls(reply, keep[0]) if keep else reply


def termination_reply(text: str, payload: dict[str, Any]) -> dict[str, Any]:
    return termination_message(text, model_named(payload))


def with_call(reply: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    """The message calling ``call`` after its text (``stop_reason: "tool_use"``)."""
    content = reply.get("content")
    block = {"type": "tool_use", "id": call.id, "name": call.name, "input": codec.loads(call.arguments)}
    return {**reply, "content": [*(content if isinstance(content, list) else []), block], "stop_reason": "tool_use"}


def termination_events(text: str, payload: dict[str, Any]) -> list[bytes]:
    return termination_stream(text, model_named(payload))


REPLIES = Replies(
    reply_types=(dict,),
    proposed_calls=proposed,
    keep_calls=kept,
    answer=answer,
    prepend_text=prepend_text,
    output_tokens=output_tokens,
    with_call=with_call,
)
AUTHORED = Authored(termination_reply, termination_events, error_body, error_event)
