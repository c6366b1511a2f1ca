"""Reading a non-streaming ``response`` and writing the ones the gateway answers with itself.

A termination reply must look like any model answer to the agent's framework: a ``response``
object with status ``completed`` and one assistant ``message`` item, which the openai SDK parses
and the Agents SDK takes as the run's final output, so the agent's loop ends gracefully.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from gateway.protocols.errors import error_body
from gateway.protocols.responses.parse import CALL_TYPES, call_from_item, content_text, item_type
from gateway.trace.model import ToolCall

__all__ = ["error_body", "keep_calls", "message_item", "proposed_calls", "reply_text", "response_object"]


def zero_usage() -> dict[str, Any]:
    """Usage of a reply no model wrote (fresh dicts: callers may add to them)."""
    return {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    }


_TOOL_CHOICES = frozenset({"none", "auto", "required"})


def output_items(reply: Any) -> list[Any]:
    output = reply.get("output") if isinstance(reply, dict) else None
    return output if isinstance(output, list) else []


def proposed_calls(reply: Any) -> tuple[ToolCall, ...]:
    """The function and custom tool calls of ``output``, in order."""
    calls = (call_from_item(item) for item in output_items(reply) if item_type(item) in CALL_TYPES)
    return tuple(call for call in calls if call is not None)


def custom_call_ids(reply: Any) -> set[str]:
    return {
        item["call_id"]
        for item in output_items(reply)
        if item_type(item) == "custom_tool_call" and isinstance(item.get("call_id"), str)
    }


def keep_calls(reply: dict[str, Any], count: int) -> dict[str, Any]:
    """The reply with only its first ``count`` tool calls; every other item stays in place."""
    kept: list[Any] = []
    seen = 0
    for item in output_items(reply):
        if item_type(item) in CALL_TYPES and call_from_item(item) is not None:
            seen += 1
            if seen > count:
                continue
        kept.append(item)
    return {**reply, "output": kept}


def reply_text(reply: Any) -> str:
    """The assistant text: the ``output_text`` parts of the reply's message items."""
    texts = [
        content_text(item.get("content"))
        for item in output_items(reply)
        if item_type(item) == "message" and item.get("role", "assistant") == "assistant"
    ]
    return "\n".join(text for text in texts if text)


def message_item(text: str, item_id: str | None = None, status: str = "completed") -> dict[str, Any]:
    """An assistant message item whose only content is ``text``."""
    return {
        "id": item_id or new_id("msg"),
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def response_object(
    payload: dict[str, Any], output: list[Any], status: str = "completed", response_id: str | None = None
) -> dict[str, Any]:
    """A ``response`` object for ``payload`` carrying ``output`` (the gateway's own replies)."""
    model = payload.get("model")
    choice = payload.get("tool_choice")
    instructions = payload.get("instructions")
    previous = payload.get("previous_response_id")
    parallel = payload.get("parallel_tool_calls")
    return {
        "id": response_id or new_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": instructions if isinstance(instructions, str) else None,
        "model": model if isinstance(model, str) else "",
        "output": output,
        "parallel_tool_calls": parallel if isinstance(parallel, bool) else True,
        "previous_response_id": previous if isinstance(previous, str) else None,
        # The declared tools are not echoed: their shapes are the client's to get right, and a
        # reply the SDK cannot parse would break the agent the gateway means to stop gracefully.
        "tool_choice": choice if isinstance(choice, str) and choice in _TOOL_CHOICES else "auto",
        "tools": [],
        "usage": zero_usage() if status == "completed" else None,
        "metadata": {},
    }


def termination_reply(text: str, payload: dict[str, Any]) -> dict[str, Any]:
    return response_object(payload, [message_item(text)])


def new_id(prefix: str) -> str:
    return f"{prefix}_loopguard_{secrets.token_hex(12)}"
