"""Replies the gateway writes itself: the termination reply and the veto exchange.

The termination reply must look like any model answer to the agent's framework (a valid
``chat.completion``, or a valid SSE stream ending in ``[DONE]``) so the agent's loop ends
gracefully on ``finish_reason: "stop"`` instead of on an exception.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gateway.protocols.adapters import model_named
from gateway.protocols.chat.chunks import Envelope, content_chunk, finish_chunk, role_chunk, usage_chunk
from gateway.protocols.errors import error_body, openai_error
from gateway.protocols.roles.authored import Authored
from gateway.protocols.sse import DONE, data_event
from gateway.trace.model import ToolCall

__all__ = [
    "assistant_message_for",
    "error_body",
    "termination_completion",
    "termination_stream",
    "veto_observation",
]

_ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def termination_completion(text: str, model: str, envelope: Envelope | None = None, choices: int = 1) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` whose only content is ``text``, in each of the
    ``choices`` the client asked for (``n``): a client reading its second answer finds one."""
    env = envelope or Envelope.new(model)
    body: dict[str, Any] = {
        "id": env.id,
        "object": "chat.completion",
        "created": env.created,
        "model": env.model,
        "choices": [
            {
                "index": index,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
            for index in range(choices)
        ],
        "usage": dict(_ZERO_USAGE),
    }
    if env.system_fingerprint is not None:
        body["system_fingerprint"] = env.system_fingerprint
    return body


def termination_stream(
    text: str, model: str, envelope: Envelope | None = None, include_usage: bool = False, choices: int = 1
) -> list[bytes]:
    """The same reply as a complete SSE stream: role, content, finish "stop" (each choice in
    turn), [usage], [DONE].

    ``include_usage`` mirrors the request's ``stream_options.include_usage``.
    """
    env = envelope or Envelope.new(model)
    chunks = [
        chunk
        for index in range(choices)
        for chunk in (role_chunk(env, index), content_chunk(env, text, index=index), finish_chunk(env, "stop", index))
    ]
    if include_usage:
        chunks.append(usage_chunk(env, dict(_ZERO_USAGE)))
    return [data_event(chunk) for chunk in chunks] + [DONE]


def veto_observation(call: ToolCall, text: str) -> dict[str, Any]:
    """The error observation standing in for a vetoed call's result."""
    if not call.id:  # legacy function_call: results are `role: function` messages
        return {"role": "function", "name": call.name, "content": text}
    return {"role": "tool", "tool_call_id": call.id, "content": text}


def assistant_message_for(calls: Iterable[ToolCall], content: str | None = None) -> dict[str, Any]:
    """The assistant turn that proposed ``calls``, so the model sees what it asked for."""
    calls = list(calls)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if len(calls) == 1 and not calls[0].id:
        message["function_call"] = {"name": calls[0].name, "arguments": calls[0].arguments}
        return message
    message["tool_calls"] = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
    ]
    return message


def termination_reply(text: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``termination_completion`` for the request: its model, as many choices as it asked."""
    return termination_completion(text, model_named(payload), choices=_choices(payload))


def termination_events(text: str, payload: dict[str, Any]) -> list[bytes]:
    """``termination_stream`` for the request, with a usage chunk when it asked for one."""
    options = payload.get("stream_options")
    include_usage = bool(options.get("include_usage")) if isinstance(options, dict) else False
    return termination_stream(text, model_named(payload), include_usage=include_usage, choices=_choices(payload))


def _choices(payload: dict[str, Any]) -> int:
    """How many choices the client asked for (``n``); the gateway's own replies have as many."""
    n = payload.get("n")
    return n if type(n) is int and n > 1 else 1


AUTHORED = Authored(
    termination_reply=termination_reply,
    termination_stream=termination_events,
    error_body=openai_error,
    error_event=data_event,
)
