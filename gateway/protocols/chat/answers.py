"""Reading and amending a chat answer as a whole: its proposed calls per choice, its text, and a
warning put in front of that text (unary ``chat.completion`` or a complete client-bound stream).

Used by the response path's judging and by a turn that requires a tool (the warning that the
model still has not called it). Nothing here raises on an odd body: callers fail open.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols.base import Answer
from gateway.protocols.chat.chunks import Envelope, content_chunk
from gateway.protocols.chat.parse import tool_calls_from_message
from gateway.protocols.chat.tokens import output_tokens
from gateway.protocols.roles.replies import Replies
from gateway.protocols.sse import data_event, json_events
from gateway.trace.model import ToolCall

# --- non-streamed answers --------------------------------------------------------------------


def choices(reply: dict[str, Any]) -> list[Any]:
    found = reply.get("choices") if isinstance(reply, dict) else None
    return found if isinstance(found, list) else []


def proposed_calls(reply: dict[str, Any]) -> list[tuple[ToolCall, ...]]:
    """Each choice's proposed calls, in choice order."""
    return [tool_calls_from_message(c.get("message")) if isinstance(c, dict) else () for c in choices(reply)]


def keep_calls(reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
    """Choice ``i`` keeps its first ``keep[i]`` calls; a choice left without any ends with
    ``finish_reason: "stop"``, as a plain answer would."""
    out = dict(reply)
    out["choices"] = [_trim(c, keep[i]) if i < len(keep) else c for i, c in enumerate(choices(reply))]
    return out


def _trim(choice: Any, count: int) -> Any:
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        return choice
    message = dict(message)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        message["tool_calls"] = calls[:count]
    if count == 0:
        message.pop("tool_calls", None)
        message.pop("function_call", None)
        return {**choice, "message": message, "finish_reason": "stop"}
    return {**choice, "message": message}


def answer(reply: dict[str, Any]) -> Answer | None:
    """Choice 0's answer; None when it cannot be read."""
    found = choices(reply)
    message = found[0].get("message") if found and isinstance(found[0], dict) else None
    if not isinstance(message, dict):
        return None
    text = message.get("content")
    return Answer(bool(tool_calls_from_message(message)), text if isinstance(text, str) else "")


def prepend_text(reply: dict[str, Any], text: str) -> dict[str, Any]:
    """Choice 0's content with ``text`` and a blank line in front."""
    out = dict(reply)
    first = dict(choices(reply)[0])
    message = dict(first["message"])
    content = message.get("content")
    message["content"] = text + "\n\n" + (content if isinstance(content, str) else "")
    out["choices"] = [{**first, "message": message}, *choices(reply)[1:]]
    return out


def with_call(reply: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    """Choice 0 calling ``call`` after its text (``finish_reason: "tool_calls"``)."""
    out = dict(reply)
    first = dict(choices(reply)[0])
    message = dict(first["message"])
    function = {"name": call.name, "arguments": call.arguments}
    message["tool_calls"] = [
        *(message.get("tool_calls") or []),
        {"id": call.id, "type": "function", "function": function},
    ]
    out["choices"] = [{**first, "message": message, "finish_reason": "tool_calls"}, *choices(reply)[1:]]
    return out


# --- streamed answers ------------------------------------------------------------------------


def stream_answer(stream: bytes) -> Answer | None:
    """What a complete client-bound SSE stream says for choice 0; None when it holds an error
    event or no readable chunk."""
    calls, parts, readable = False, [], False
    for _raw, chunk in json_events(stream):
        if chunk is None:
            continue
        if "error" in chunk:
            return None
        readable = True
        delta = _delta(chunk)
        calls = calls or bool(delta.get("tool_calls") or delta.get("function_call"))
        if isinstance(delta.get("content"), str):
            parts.append(delta["content"])
    return Answer(calls, "".join(parts)) if readable else None


def stream_prepend_text(stream: bytes, text: str) -> bytes:
    """The stream with one content delta holding ``text`` before choice 0's first content
    (or its finish), in the stream's own envelope, so clients accumulate text + answer."""
    events = json_events(stream)
    role_seen = False
    for position, (_raw, chunk) in enumerate(events):
        if chunk is None:
            continue
        delta, choice = _delta(chunk), _choice(chunk)
        if delta.get("content") or (choice is not None and choice.get("finish_reason")):
            piece = content_chunk(Envelope.from_chunk(chunk), text + "\n\n", role=not role_seen)
            raws = [raw for raw, _ in events]
            return b"".join([*raws[:position], data_event(piece), *raws[position:]])
        role_seen = role_seen or "role" in delta
    return stream


def _choice(chunk: dict[str, Any]) -> dict[str, Any] | None:
    found = chunk.get("choices")
    if not isinstance(found, list):
        return None
    return next((c for c in found if isinstance(c, dict) and c.get("index", 0) == 0), None)


def _delta(chunk: dict[str, Any]) -> dict[str, Any]:
    choice = _choice(chunk)
    delta = choice.get("delta") if choice is not None else None
    return delta if isinstance(delta, dict) else {}


REPLIES = Replies(
    reply_types=(dict,),
    proposed_calls=proposed_calls,
    keep_calls=keep_calls,
    answer=answer,
    prepend_text=prepend_text,
    output_tokens=output_tokens,
    with_call=with_call,
)
