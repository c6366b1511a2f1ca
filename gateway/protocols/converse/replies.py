"""Converse replies: read, amended, and the replies and errors the gateway writes itself.

A reply is ``{"output": {"message": {"role": "assistant", "content": [block, ...]}},
"stopReason", "usage": {"inputTokens", "outputTokens", "totalTokens"}, "metrics"}``; one answer,
no alternatives. Errors are Bedrock's, written as InvokeModel's are (``bedrock.replies.error_body``:
``{"message", "__type"}`` with the ``x-amzn-ErrorType`` header): botocore raises its
``ValidationException``, ``ThrottlingException``, ... and retries what it retries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols.base import Answer
from gateway.protocols.bedrock.replies import error_body
from gateway.protocols.converse.events import ZERO_USAGE
from gateway.protocols.converse.parse import blocks_of, calls_of, text_of
from gateway.protocols.converse.tokens import output_tokens
from gateway.protocols.roles.replies import Replies
from gateway.trace.model import ToolCall

# The exceptions a Converse stream can carry (its union's members); others are told as the
# nearest one, so botocore still names the error.
__all__ = ["REPLIES", "error_body", "stream_exception", "termination"]
_IN_STREAM = {
    "ValidationException": "validationException",
    "ThrottlingException": "throttlingException",
    "ServiceUnavailableException": "serviceUnavailableException",
    "InternalServerException": "internalServerException",
}


def message_of(reply: Any) -> dict[str, Any] | None:
    output = reply.get("output") if isinstance(reply, dict) else None
    message = output.get("message") if isinstance(output, dict) else None
    return message if isinstance(message, dict) else None


def proposed_calls(reply: Any) -> list[tuple[ToolCall, ...]]:
    return [tuple(calls_of(blocks_of(message_of(reply))))]


def keep_calls(reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
    """Only the first ``keep[0]`` ``toolUse`` blocks stay (every other block too); with none
    left the turn ends as a plain answer (``end_turn``) instead of waiting for results."""
    message = message_of(reply)
    if message is None or not keep:
        return reply
    blocks, seen = [], 0
    for block in blocks_of(message):
        if isinstance(block.get("toolUse"), dict):
            seen += 1
            if seen > keep[0]:
                continue
        blocks.append(block)
    if seen <= keep[0]:
        return reply
    out = {**reply, "output": {**reply["output"], "message": {**message, "content": blocks}}}
    if keep[0] == 0:
        out["stopReason"] = "end_turn"
    return out


def answer(reply: Any) -> Answer | None:
    message = message_of(reply)
    if message is None:
        return None
    content = blocks_of(message)
    return Answer(any(True for _ in calls_of(content)), text_of(content))


def prepend_text(reply: Any, text: str) -> Any:
    message = message_of(reply)
    if message is None:
        return reply
    content = [{"text": text + "\n\n"}, *blocks_of(message)]
    return {**reply, "output": {**reply["output"], "message": {**message, "content": content}}}


def termination(text: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """A complete reply whose only content is ``text``, ending the turn."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": dict(ZERO_USAGE),
        "metrics": {"latencyMs": 0},
    }


def stream_exception(body: dict[str, Any]) -> str:
    """The stream member an error body is sent as (``error_body``'s ``__type``)."""
    return _IN_STREAM.get(str(body.get("__type")), "validationException")


REPLIES = Replies(
    reply_types=(dict,),
    proposed_calls=proposed_calls,
    keep_calls=keep_calls,
    answer=answer,
    prepend_text=prepend_text,
    output_tokens=output_tokens,
)
