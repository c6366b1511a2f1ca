"""The tool calls a client reads off a reply, per protocol, as its SDK assembles them: JSON
replies whole; SSE events line by line (``data:`` lines joined; google-genai also reads a line
that is no ``data:`` line as raw JSON); event-stream frames with botocore (Converse events as
boto3 yields them, InvokeModel chunks unwrapped as the anthropic SDK unwraps them). A block or
call is read at its position whatever its index says (agents read ``choices[0]``, the anthropic
SDK appends each started block), its arguments as streamed, concatenated.

``looping_calls`` are the ones equal to the looping cloud's call: ``read_file`` with ``{"path":
"a.txt"}`` under a fresh id (``MARK``): what an agent would run as the 5th identical call.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from botocore.eventstream import EventStreamBuffer

from support.looping_cloud import MARK

Call = tuple[str, str, Any]  # (id, name, arguments as parsed, None when they are no JSON)


def _get(value: Any, *keys: Any) -> Any:
    """``value[k1][k2]...`` through objects only; None where any step is not there."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _sse_datas(body: bytes, raw_lines: bool = False) -> list[Any]:
    """Each event's data as JSON (events whose data is no JSON skipped)."""
    out: list[Any] = []
    lines: list[bytes] = []
    for line in body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n") + [b""]:
        if line.startswith(b"data:"):
            lines.append(line[5:].removeprefix(b" "))
        elif raw_lines and line.strip() and not line.startswith((b":", b"event:", b"id:", b"retry:")):
            out.append(line)  # google-genai: a raw JSON line is a chunk of its own
            continue
        if not line and lines:
            out.append(b"\n".join(lines))
            lines = []
    parsed = []
    for data in out:
        try:
            parsed.append(json.loads(data))
        except ValueError:
            continue
    return parsed


def _chat(values: list[Any], stream: bool) -> list[Call]:
    if not stream:
        return [
            (str(_get(c, "id")), str(_get(c, "function", "name")), _args(_get(c, "function", "arguments")))
            for v in values
            for ch in _list(_get(v, "choices"))
            for c in _list(_get(ch, "message", "tool_calls"))
        ]
    calls: dict[Any, dict[str, str]] = {}
    for chunk in values:
        for choice in _list(_get(chunk, "choices")):
            for entry in _list(_get(choice, "delta", "tool_calls")):
                index = _get(entry, "index")
                call = calls.setdefault(
                    index if isinstance(index, (int, str)) else 0, {"id": "", "name": "", "arguments": ""}
                )
                call["id"] = call["id"] or str(_get(entry, "id") or "")
                call["name"] += str(_get(entry, "function", "name") or "")
                call["arguments"] += str(_get(entry, "function", "arguments") or "")
    return [(c["id"], c["name"], _args(c["arguments"])) for c in calls.values()]


def _responses(values: list[Any], stream: bool) -> list[Call]:
    items: list[Any] = []
    for value in values:
        if not stream:
            items += _list(_get(value, "output"))
        elif _get(value, "type") == "response.output_item.done":
            items.append(_get(value, "item"))
        elif _get(value, "type") in ("response.completed", "response.incomplete"):
            items += _list(_get(value, "response", "output"))
    return [
        (str(_get(i, "call_id")), str(_get(i, "name")), _args(_get(i, "arguments")))
        for i in items
        if _get(i, "type") == "function_call"
    ]


def _anthropic(values: list[Any], stream: bool) -> list[Call]:
    if not stream:
        return [
            (str(_get(b, "id")), str(_get(b, "name")), _get(b, "input"))
            for v in values
            for b in _list(_get(v, "content"))
            if _get(b, "type") == "tool_use"
        ]
    blocks: list[dict[str, Any]] = []
    for event in values:
        kind = _get(event, "type")
        if kind == "content_block_start" and isinstance(_get(event, "content_block"), dict):
            blocks.append({**event["content_block"], "json": ""})
        elif kind == "content_block_delta" and blocks:
            index = _get(event, "index")
            block = blocks[index] if type(index) is int and 0 <= index < len(blocks) else blocks[-1]
            block["json"] += str(_get(event, "delta", "partial_json") or "")
    return [
        (str(b.get("id")), str(b.get("name")), _args(b["json"]) if b["json"] else b.get("input"))
        for b in blocks
        if b.get("type") == "tool_use"
    ]


def _gemini(values: list[Any]) -> list[Call]:
    chunks = [c for v in values for c in (v if isinstance(v, list) else [v])]
    return [
        (str(_get(p, "functionCall", "id")), str(_get(p, "functionCall", "name")), _get(p, "functionCall", "args"))
        for c in chunks
        for cand in _list(_get(c, "candidates"))
        for p in _list(_get(cand, "content", "parts"))
        if isinstance(_get(p, "functionCall"), dict)
    ]


def _frames(body: bytes) -> list[tuple[dict[str, Any], Any]]:
    """(headers, payload as JSON) of every frame botocore reads, up to what it cannot."""
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    out = []
    try:
        for message in buffer:
            try:
                payload = json.loads(bytes(message.payload))
            except ValueError:
                payload = None
            out.append((message.headers, payload))
    except Exception:  # the reader stops at what it cannot read, as boto3's does
        pass
    return out


def _converse(body: bytes, stream: bool) -> list[Call]:
    if not stream:
        try:
            reply = json.loads(body)
        except ValueError:
            return []
        return [
            (str(_get(b, "toolUse", "toolUseId")), str(_get(b, "toolUse", "name")), _get(b, "toolUse", "input"))
            for b in _list(_get(reply, "output", "message", "content"))
            if isinstance(_get(b, "toolUse"), dict)
        ]
    calls: list[dict[str, Any]] = []
    for headers, payload in _frames(body):
        if headers.get(":message-type") in ("exception", "error"):
            continue
        name = headers.get(":event-type")
        if name == "contentBlockStart" and isinstance(use := _get(payload, "start", "toolUse"), dict):
            calls.append({"id": str(use.get("toolUseId")), "name": str(use.get("name")), "input": ""})
        elif name == "contentBlockDelta" and calls:
            calls[-1]["input"] += str(_get(payload, "delta", "toolUse", "input") or "")
    return [(c["id"], c["name"], _args(c["input"])) for c in calls]


def _bedrock(body: bytes, stream: bool) -> list[Call]:
    if not stream:
        try:
            return _anthropic([json.loads(body)], False)
        except ValueError:
            return []
    events = []
    for headers, payload in _frames(body):
        inner = _get(payload, "bytes")
        if headers.get(":event-type") != "chunk" or not isinstance(inner, str):
            continue
        try:
            events.append(json.loads(base64.b64decode(inner)))
        except ValueError:
            continue
    return _anthropic(events, True)


def calls_read(family: str, body: bytes, content_type: str) -> list[Call]:
    """The calls a client of ``family`` reads off a success reply with this content type."""
    framed = content_type.startswith("application/vnd.amazon.eventstream")
    sse = content_type.startswith("text/event-stream") or (
        not framed and not content_type.startswith("application/json") and b"data:" in body[:64]
    )
    if family == "converse":
        return _converse(body, framed)
    if family == "bedrock":
        return _bedrock(body, framed)
    if sse:
        values = _sse_datas(body, raw_lines=family == "gemini")
    else:
        try:
            values = [json.loads(body)]
        except ValueError:
            values = []
    if family == "chat":
        return _chat(values, sse)
    if family == "responses":
        return _responses(values, sse)
    if family == "anthropic":
        return _anthropic(values, sse)
    return _gemini(values)


def looping_calls(family: str, body: bytes, content_type: str) -> list[Call]:
    """The looping cloud's call, as a client reads it: the 5th identical call, delivered."""
    return [
        call
        for call in calls_read(family, body, content_type)
        if MARK in call[0] and call[1] == "read_file" and call[2] == {"path": "a.txt"}
    ]
