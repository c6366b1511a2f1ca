"""OpenAI Responses API payloads as the real API sends them: response objects, items, streams.

Streams are encoded with ``json.dumps`` (spaces after separators), unlike the gateway's orjson,
so a test can tell an event relayed byte for byte from one the gateway re-encoded.
"""

from __future__ import annotations

import json
from typing import Any

MODEL = "gpt-4.1-2025-04-14"
USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 30,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 150,
}


def message(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    return {"id": item_id, "type": "message", "status": "completed", "content": [part], "role": "assistant"}


def function_call(name: str, arguments: str, call_id: str, item_id: str | None = None) -> dict[str, Any]:
    return {
        "id": item_id or f"fc_{call_id}",
        "type": "function_call",
        "status": "completed",
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


def custom_call(name: str, text: str, call_id: str) -> dict[str, Any]:
    return {
        "id": f"ctc_{call_id}",
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "input": text,
    }


def reasoning(item_id: str = "rs_1", summary: str | None = None) -> dict[str, Any]:
    """A reasoning item; ``summary``: its one summary text (streamed as summary deltas)."""
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return {"id": item_id, "type": "reasoning", "summary": parts}


def response(
    output: list[dict[str, Any]], response_id: str = "resp_1", status: str = "completed", **fields: Any
) -> dict[str, Any]:
    body = {
        "id": response_id,
        "object": "response",
        "created_at": 1741476542,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [
            {
                "type": "function",
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": False,
            }
        ],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": USAGE if status == "completed" else None,
        "user": None,
        "metadata": {},
    }
    return {**body, **fields}


def item_events(item: dict[str, Any], index: int, pieces: int = 3) -> list[dict[str, Any]]:
    """The events of one output item, its text or arguments split into ``pieces`` deltas."""
    kind = item["type"]
    where = {"item_id": item["id"], "output_index": index}
    if kind == "message":
        text = item["content"][0]["text"]
        part = item["content"][0]
        events = [
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {"type": "response.content_part.added", **where, "content_index": 0, "part": {**part, "text": ""}},
        ]
        events += [
            {"type": "response.output_text.delta", **where, "content_index": 0, "delta": d, "logprobs": []}
            for d in _split(text, pieces)
        ]
        events += [
            {"type": "response.output_text.done", **where, "content_index": 0, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **where, "content_index": 0, "part": part},
        ]
    elif kind in ("function_call", "custom_tool_call"):
        field = "arguments" if kind == "function_call" else "input"
        stem = "function_call_arguments" if kind == "function_call" else "custom_tool_call_input"
        events = [
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", field: ""},
            }
        ]
        events += [{"type": f"response.{stem}.delta", **where, "delta": d} for d in _split(item[field], pieces)]
        done = {"type": f"response.{stem}.done", **where, field: item[field]}
        # The API names the function on its arguments' done event (SDKs before 3.x require it).
        events.append({**done, "name": item["name"]} if kind == "function_call" else done)
    elif kind == "reasoning" and item["summary"]:
        part = item["summary"][0]
        where = {**where, "summary_index": 0}
        events = [
            {"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}},
            {"type": "response.reasoning_summary_part.added", **where, "part": {**part, "text": ""}},
        ]
        events += [
            {"type": "response.reasoning_summary_text.delta", **where, "delta": d} for d in _split(part["text"], pieces)
        ]
        events += [
            {"type": "response.reasoning_summary_text.done", **where, "text": part["text"]},
            {"type": "response.reasoning_summary_part.done", **where, "part": part},
        ]
    else:
        events = [{"type": "response.output_item.added", "output_index": index, "item": item}]
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def stream_events(
    output: list[dict[str, Any]], response_id: str = "resp_1", pieces: int = 3, closing: str = "response.completed"
) -> list[dict[str, Any]]:
    started = response([], response_id, "in_progress")
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(output):
        events += item_events(item, index, pieces)
    status = closing.removeprefix("response.")
    events.append({"type": closing, "response": response(output, response_id, status)})
    return [{**event, "sequence_number": seq} for seq, event in enumerate(events)]


def encode(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(encode(event) for event in events)


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]
