"""Reading and amending a Responses answer as a whole: a ``response`` object or a complete
client-bound event stream. A turn that requires a tool reads what the model answered and may
put a warning in front of its text. Nothing here raises on an odd body."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.protocols.base import Answer
from gateway.protocols.responses import events as wire
from gateway.protocols.responses.replies import message_item, output_items, proposed_calls, reply_text
from gateway.protocols.sse import SSEDecoder
from gateway.trace.model import ToolCall

_CLOSING = ("response.completed", "response.incomplete")


def answer(reply: Any) -> Answer | None:
    if not isinstance(reply, dict) or not isinstance(reply.get("output"), list):
        return None
    return Answer(bool(proposed_calls(reply)), reply_text(reply))


def prepend_text(reply: dict[str, Any], text: str) -> dict[str, Any]:
    """The first message's first text part starts with ``text`` and a blank line; a reply
    without a message gets one, first."""
    output = output_items(reply)
    for position, item in enumerate(output):
        patched = _prepended_item(item, text)
        if patched is not None:
            return {**reply, "output": [*output[:position], patched, *output[position + 1 :]]}
    return {**reply, "output": [message_item(text), *output]}


def with_call(reply: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    """The answer calling ``call`` after its output (a ``function_call`` item)."""
    item = {
        "id": f"fc_{call.id}",
        "type": "function_call",
        "status": "completed",
        "arguments": call.arguments,
        "call_id": call.id,
        "name": call.name,
    }
    return {**reply, "output": [*output_items(reply), item]}


def stream_answer(stream: bytes) -> Answer | None:
    """What the stream's closing response answers; None when it failed or has none."""
    closing = [e for e in _events(stream) if e.get("type") in (*_CLOSING, "response.failed", "error")]
    if not closing or closing[-1].get("type") not in _CLOSING:
        return None
    return answer(closing[-1].get("response"))


def stream_prepend_text(stream: bytes, text: str) -> bytes:
    """The stream with ``text`` in front of the first message's text, in every event that
    carries it (delta, done events, the finished item, the closing response); a stream without
    a message gets one before its closing event. Sequence numbers stay consistent."""
    events = _events(stream)
    target = next(
        (
            e["item"].get("id")
            for e in events
            if e.get("type") == "response.output_item.added"
            and isinstance(e.get("item"), dict)
            and e["item"].get("type") == "message"
        ),
        None,
    )
    if target is None:
        return _with_new_message(events, text)
    out: list[bytes] = []
    delta_done = False
    for event in events:
        kind = event.get("type")
        if kind == "response.output_text.delta" and event.get("item_id") == target and not delta_done:
            event, delta_done = {**event, "delta": f"{text}\n\n{event.get('delta', '')}"}, True
        elif kind == "response.output_text.done" and event.get("item_id") == target:
            event = {**event, "text": f"{text}\n\n{event.get('text', '')}"}
        elif kind == "response.content_part.done" and event.get("item_id") == target:
            event = {**event, "part": _prepended_part(event.get("part"), text)}
        elif (
            kind == "response.output_item.done"
            and isinstance(event.get("item"), dict)
            and event["item"].get("id") == target
        ):
            event = {**event, "item": _prepended_item(event["item"], text) or event["item"]}
        elif kind in _CLOSING and isinstance(event.get("response"), dict):
            event = {**event, "response": prepend_text(event["response"], text)}
        out.append(wire.encode(event))
    return b"".join(out)


def _with_new_message(events: list[dict[str, Any]], text: str) -> bytes:
    items = sum(1 for e in events if e.get("type") == "response.output_item.added")
    out: list[bytes] = []
    for event in events:
        if event.get("type") in _CLOSING:
            added, item = wire.text_message_events(text, items, event.get("sequence_number", 0))
            out += [wire.encode(e) for e in added]
            response = event.get("response")
            if isinstance(response, dict):
                event = {**event, "response": {**response, "output": [*output_items(response), item]}}
            event = {**event, "sequence_number": event.get("sequence_number", 0) + len(added)}
        out.append(wire.encode(event))
    return b"".join(out)


def _prepended_item(item: Any, text: str) -> dict[str, Any] | None:
    if not (isinstance(item, dict) and item.get("type") == "message" and isinstance(item.get("content"), list)):
        return None
    content = item["content"]
    for position, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "output_text":
            patched = _prepended_part(part, text)
            return {**item, "content": [*content[:position], patched, *content[position + 1 :]]}
    return None


def _prepended_part(part: Any, text: str) -> Any:
    if not isinstance(part, dict):
        return part
    old = part.get("text")
    return {**part, "text": f"{text}\n\n{old}" if isinstance(old, str) else text}


def _events(stream: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    found: list[dict[str, Any]] = []
    for event in [*decoder.feed(stream), *decoder.flush()]:
        if event.data is None or event.data == "[DONE]":
            continue
        try:
            data = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict):
            found.append(data)
    return found
