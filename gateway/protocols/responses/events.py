"""Responses stream events the gateway writes: the encoding, and a final text message's events.

Each event is ``event: <type>`` plus one ``data:`` line whose JSON repeats the type and carries
a ``sequence_number``; the client's numbers must strictly increase across the whole stream.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.protocols.errors import openai_error
from gateway.protocols.responses.replies import message_item, response_object, termination_reply
from gateway.protocols.roles.authored import Authored
from gateway.protocols.sse import SSEDecoder
from gateway.wire import codec


def encode(event: dict[str, Any]) -> bytes:
    return (
        b"event: "
        + str(event.get("type", "")).encode("utf-8", "backslashreplace")
        + b"\ndata: "
        + codec.dumps(event)
        + b"\n\n"
    )


def text_message_events(text: str, output_index: int, first_seq: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events of one assistant message item carrying ``text``, numbered from ``first_seq``;
    returns them and the finished item (for the closing response's ``output``)."""
    done = message_item(text)
    item_id = done["id"]
    part = done["content"][0]
    where = {"item_id": item_id, "output_index": output_index}
    events: list[dict[str, Any]] = [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {**done, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **where, "content_index": 0, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **where, "content_index": 0, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **where, "content_index": 0, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "content_index": 0, "part": part},
        {"type": "response.output_item.done", "output_index": output_index, "item": done},
    ]
    for offset, event in enumerate(events):
        event["sequence_number"] = first_seq + offset
    return events, done


def closing(stream: bytes) -> bytes:
    """What closes a Responses stream cut short after ``stream``, as the API closes an item it
    stopped writing: each item added and never done gets its open parts closed (a message's text
    so far) and its ``output_item.done`` with status ``incomplete``; numbered on from the
    stream's last number. Only complete events count: a partial one was never relayed."""
    cut: dict[Any, _CutItem] = {}  # output_index -> an item added and not done yet
    seq = 0
    for event in _complete_events(stream):
        number, kind, index = event.get("sequence_number"), event.get("type"), event.get("output_index")
        if type(number) is int:
            seq = number + 1
        if kind == "response.output_item.added" and isinstance(event.get("item"), dict):
            cut[index] = _CutItem({**event["item"], "status": "incomplete"})
        elif kind == "response.output_item.done":
            cut.pop(index, None)
        elif index in cut:
            cut[index].add(kind, event)
    out: list[bytes] = []
    for index, item in cut.items():
        for event in item.closing(index):
            out.append(encode({**event, "sequence_number": seq}))
            seq += 1
    return b"".join(out)


class _CutItem:
    """An output item as streamed so far: its content parts and their text, or its arguments."""

    def __init__(self, item: dict[str, Any]) -> None:
        self.item = item
        self.open_parts: list[int] = []

    def add(self, kind: Any, event: dict[str, Any]) -> None:
        item, at, part = self.item, event.get("content_index"), event.get("part")
        if kind == "response.function_call_arguments.delta":
            item["arguments"] = str(item.get("arguments") or "") + str(event.get("delta") or "")
            return
        content = item.get("content")
        if kind == "response.content_part.added" and isinstance(part, dict):
            item["content"] = [*(content if isinstance(content, list) else []), part]
            self.open_parts.append(len(item["content"]) - 1)
        elif not isinstance(content, list) or type(at) is not int or not 0 <= at < len(content):
            return
        elif kind == "response.output_text.delta":
            content[at] = {**content[at], "text": str(content[at].get("text") or "") + str(event.get("delta") or "")}
        elif kind == "response.content_part.done" and isinstance(part, dict):
            content[at] = part
            if at in self.open_parts:
                self.open_parts.remove(at)

    def closing(self, index: Any) -> list[dict[str, Any]]:
        """Its open parts closed (text done, part done), then the item done."""
        item = self.item
        where = {"item_id": item.get("id"), "output_index": index}
        events: list[dict[str, Any]] = []
        for at in self.open_parts:
            part = item["content"][at]
            if part.get("type") == "output_text":
                events.append(
                    {
                        "type": "response.output_text.done",
                        **where,
                        "content_index": at,
                        "text": part.get("text", ""),
                        "logprobs": [],
                    }
                )
            events.append({"type": "response.content_part.done", **where, "content_index": at, "part": part})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events


def _complete_events(stream: bytes) -> list[dict[str, Any]]:
    found = []
    for sse in SSEDecoder().feed(stream):
        if sse.data is None or sse.data == "[DONE]":
            continue
        try:
            data = orjson.loads(sse.data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def termination_events(text: str, payload: dict[str, Any]) -> list[bytes]:
    """A complete stream answering ``text``: created, in_progress, the message, completed."""
    started = response_object(payload, [], status="in_progress")
    events, item = text_message_events(text, 0, 2)
    finished = {**started, "status": "completed", "output": [item], "usage": response_object(payload, [])["usage"]}
    return [
        encode(e)
        for e in (
            {"type": "response.created", "sequence_number": 0, "response": started},
            {"type": "response.in_progress", "sequence_number": 1, "response": started},
            *events,
            {"type": "response.completed", "sequence_number": 2 + len(events), "response": finished},
        )
    ]


def error_event(body: dict[str, Any]) -> bytes:
    """An error body (``{"error": {...}}``) as the stream's ``error`` event. Its sequence number
    is unknown here; clients read the event by its type."""
    error = error_value if isinstance(error_value := body.get("error"), dict) else {}
    return encode(
        {
            "type": "error",
            "code": error.get("code"),
            "message": str(error.get("message", "")),
            "param": error.get("param"),
            "sequence_number": 0,
        }
    )


# The replies the gateway writes in this protocol (the non-streaming one is built in ``replies``).
AUTHORED = Authored(termination_reply, termination_events, openai_error, error_event)
