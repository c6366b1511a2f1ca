"""Responses stream events the gateway writes: the encoding, and a final text message's events.

Each event is ``event: <type>`` plus one ``data:`` line whose JSON repeats the type and carries
a ``sequence_number``; the client's numbers must strictly increase across the whole stream.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.protocols.responses.replies import message_item, response_object


def encode(event: dict[str, Any]) -> bytes:
    return b"event: " + str(event.get("type", "")).encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def text_message_events(text: str, output_index: int, first_seq: int) -> tuple[list[dict[str, Any]], dict]:
    """The events of one assistant message item carrying ``text``, numbered from ``first_seq``;
    returns them and the finished item (for the closing response's ``output``)."""
    done = message_item(text)
    item_id = done["id"]
    part = done["content"][0]
    where = {"item_id": item_id, "output_index": output_index}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": output_index,
         "item": {**done, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **where, "content_index": 0, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **where, "content_index": 0, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **where, "content_index": 0, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "content_index": 0, "part": part},
        {"type": "response.output_item.done", "output_index": output_index, "item": done},
    ]
    for offset, event in enumerate(events):
        event["sequence_number"] = first_seq + offset
    return events, done


def termination_events(text: str, payload: dict[str, Any]) -> list[bytes]:
    """A complete stream answering ``text``: created, in_progress, the message, completed."""
    started = response_object(payload, [], status="in_progress")
    events, item = text_message_events(text, 0, 2)
    finished = {**started, "status": "completed", "output": [item],
                "usage": response_object(payload, [])["usage"]}
    return [encode(e) for e in (
        {"type": "response.created", "sequence_number": 0, "response": started},
        {"type": "response.in_progress", "sequence_number": 1, "response": started},
        *events,
        {"type": "response.completed", "sequence_number": 2 + len(events), "response": finished},
    )]


def error_event(body: dict[str, Any]) -> bytes:
    """An error body (``{"error": {...}}``) as the stream's ``error`` event. Its sequence number
    is unknown here; clients read the event by its type."""
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return encode({"type": "error", "code": error.get("code"), "message": str(error.get("message", "")),
                   "param": error.get("param"), "sequence_number": 0})
