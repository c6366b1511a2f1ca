"""How a broken cloud answers: each fault turns the looping cloud's answer (``Answer``) into what a
broken upstream sends instead (cut, mislabelled, a success status that is no 200, frames botocore
refuses, indexes of the wrong type, events a lenient SDK reads and a strict one skips, ...), and
``ends_well`` checks that what a client got ends as its protocol's stream ends (its terminal event
or its error), whatever the upstream did.

``FAULTS`` maps a name to (the families it applies to, the fault); ``None`` for every family.
"""

from __future__ import annotations

import base64
import json
import random
import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from botocore.eventstream import EventStreamBuffer

from gateway.protocols.eventstream import CONTENT_TYPE, frame
from support.looping_cloud import JSON, SSE, Answer

Fault = Callable[[Answer, random.Random], Answer]
FRAMED = ("bedrock", "converse")
SSE_FAMILIES = ("chat", "responses", "anthropic", "gemini")


def _whole(answer: Answer) -> bytes:
    return b"".join(answer.pieces)


def _cut(answer: Answer, rng: random.Random) -> Answer:
    body = _whole(answer)
    at = rng.randrange(1, max(len(body), 2))
    return replace(answer, pieces=[body[:at]])


def _cut_in_event(answer: Answer, rng: random.Random) -> Answer:
    """Cut inside a later event: the events before it whole, then part of one, then the end."""
    if len(answer.pieces) < 2:
        return _cut(answer, rng)
    at = rng.randrange(1, len(answer.pieces))
    piece = answer.pieces[at]
    return replace(answer, pieces=[*answer.pieces[:at], piece[: rng.randrange(1, max(len(piece) - 1, 2))]])


def _bytewise(answer: Answer, rng: random.Random) -> Answer:
    return replace(answer, pieces=[bytes([b]) for b in _whole(answer)])


def _status(code: int) -> Fault:
    return lambda answer, rng: replace(answer, status=code)


def _labelled(kind: str) -> Fault:
    return lambda answer, rng: replace(answer, content_type=kind)


def _as_unary(answer: Answer, rng: random.Random) -> Answer:
    """A stream request answered with the one JSON reply (a stream reader finds no events)."""
    from support.looping_cloud import answer_for

    whole = answer_for(answer.family, False)
    return replace(whole, stream=answer.stream)


def _json_array(answer: Answer, rng: random.Random) -> Answer:
    if answer.stream:
        return answer
    return replace(answer, pieces=[b"[" + _whole(answer) + b"]"])


def _stall(answer: Answer, rng: random.Random) -> Answer:
    return replace(answer, stall_at=rng.randrange(0, len(answer.pieces)))


def _reset(answer: Answer, rng: random.Random) -> Answer:
    if len(answer.pieces) < 2:
        body = _whole(answer)
        answer = replace(answer, pieces=[body[: len(body) // 2], body[len(body) // 2 :]])
    return replace(answer, reset_at=rng.randrange(1, len(answer.pieces)))


def _bom(answer: Answer, rng: random.Random) -> Answer:
    return replace(answer, pieces=[b"\xef\xbb\xbf" + _whole(answer)])


def _empty(answer: Answer, rng: random.Random) -> Answer:
    return replace(answer, pieces=[b""])


def _repeat_events(answer: Answer, rng: random.Random) -> Answer:
    """Every event twice (a start, a stop, a terminal event each sent again)."""
    if not answer.stream:
        return answer
    return replace(answer, pieces=[p for piece in answer.pieces for p in (piece, piece)])


def _junk_between(answer: Answer, rng: random.Random) -> Answer:
    if not answer.stream or answer.family in FRAMED:
        return answer
    junk = rng.choice([b": keepalive\n\n", b"event: ping\ndata: {}\n\n", b"data: not json\n\n", b"\n\n", b"id: 7\n\n"])
    at = rng.randrange(0, len(answer.pieces) + 1)
    return replace(answer, pieces=[*answer.pieces[:at], junk, *answer.pieces[at:]])


# --- SSE events whose data is rewritten -------------------------------------------------------------


def _rewrite_data(answer: Answer, change: Callable[[Any], Any]) -> Answer:
    out = []
    for piece in answer.pieces:
        head, sep, data = piece.partition(b"data: ")
        try:
            value = json.loads(data)
        except ValueError:
            out.append(piece)
            continue
        out.append(head + sep + json.dumps(change(value)).encode() + b"\n\n")
    return replace(answer, pieces=out)


def _chat_choice(index: Any) -> Fault:
    def change(chunk: Any) -> Any:
        if isinstance(chunk, dict) and isinstance(chunk.get("choices"), list):
            chunk["choices"] = [{**c, "index": index} for c in chunk["choices"]]
        return chunk

    return lambda answer, rng: _rewrite_data(answer, change) if answer.stream else answer


def _chat_error_key(answer: Answer, rng: random.Random) -> Answer:
    return (
        _rewrite_data(answer, lambda c: {**c, "error": None} if isinstance(c, dict) else c) if answer.stream else answer
    )


def _event_named_error(answer: Answer, rng: random.Random) -> Answer:
    if not answer.stream:
        return answer
    return replace(answer, pieces=[b"event: error\n" + p if p.startswith(b"data: ") else p for p in answer.pieces])


def _anthropic_index(index: Any) -> Fault:
    def change(event: Any) -> Any:
        if isinstance(event, dict) and "index" in event:
            event["index"] = index
        return event

    return lambda answer, rng: _rewrite_data(answer, change) if answer.stream else answer


def _gemini_raw_line(answer: Answer, rng: random.Random) -> Answer:
    """The chunk as a raw JSON line: google-genai reads a line that is no ``data:`` line as JSON."""
    if not answer.stream:
        return answer
    return replace(answer, pieces=[p.replace(b"data: ", b"", 1) for p in answer.pieces])


def _gemini_lines_split(answer: Answer, rng: random.Random) -> Answer:
    """The chunk's JSON over two ``data:`` lines at a comma between its fields (one event, its
    lines joined by a newline: still the same JSON)."""
    if not answer.stream:
        return answer
    out = []
    for piece in answer.pieces:
        data = piece.removeprefix(b"data: ").rstrip(b"\n")
        at = data.find(b", ", len(data) // 3)
        out.append(b"data: " + data[: at + 1] + b"\ndata: " + data[at + 2 :] + b"\n\n")
    return replace(answer, pieces=out)


# --- event-stream frames ------------------------------------------------------------------------------


def _frame_at(answer: Answer, rng: random.Random, change: Callable[[bytes], bytes]) -> Answer:
    if not answer.stream:
        return answer
    at = rng.randrange(0, len(answer.pieces))
    return replace(answer, pieces=[*answer.pieces[:at], change(answer.pieces[at]), *answer.pieces[at + 1 :]])


def _flip(raw: bytes) -> bytes:
    out = bytearray(raw)
    out[-6] ^= 0x55
    return bytes(out)


def _prelude(total: int) -> Callable[[bytes], bytes]:
    def change(raw: bytes) -> bytes:
        import binascii

        body = bytearray(raw[:-4])
        body[0:4] = struct.pack(">I", total)
        body[8:12] = struct.pack(">I", binascii.crc32(bytes(body[:8])))
        return bytes(body) + struct.pack(">I", binascii.crc32(bytes(body)))

    return change


def _with_header(kind: int, value: bytes) -> Callable[[bytes], bytes]:
    def change(raw: bytes) -> bytes:
        headers = bytes([11]) + b":event-type" + bytes([kind]) + value
        return _framed(headers, _payload_of(raw))

    return change


def _framed(headers: bytes, payload: bytes) -> bytes:
    import binascii

    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", binascii.crc32(body))


def _payload_of(raw: bytes) -> bytes:
    total, headers = struct.unpack(">II", raw[:8])
    return raw[12 + headers : total - 4]


def _frames_payload(change: Callable[[Any, str], Any], only: int | None = None) -> Fault:
    """Each frame's payload rewritten (for chunks: the event inside its base64); ``only``: that
    frame's alone."""

    def fault(answer: Answer, rng: random.Random) -> Answer:
        if not answer.stream:
            return answer
        out = []
        for at, raw in enumerate(answer.pieces):
            if only is not None and at != only:
                out.append(raw)
                continue
            buffer = EventStreamBuffer()
            buffer.add_data(raw)
            message = next(buffer)
            name = message.headers[":event-type"]
            payload = json.loads(bytes(message.payload))
            if name == "chunk":
                inner = change(json.loads(base64.b64decode(payload["bytes"])), "")
                payload = {"bytes": base64.b64encode(json.dumps(inner).encode()).decode()}
            else:
                payload = change(payload, name)
            out.append(frame(name, json.dumps(payload).encode()))
        return replace(answer, pieces=out)

    return fault


def _index_as(value: Any) -> Callable[[dict[str, Any], str], dict[str, Any]]:
    def change(payload: dict[str, Any], name: str) -> dict[str, Any]:
        for key in ("contentBlockIndex", "index"):
            if key in payload:
                payload[key] = value
        return payload

    return change


WRONG: tuple[Any, ...] = (None, True, 0, -1, 1.5, "", "x", [], ["tool_use"], {}, {"type": "tool_use"})


def _mutate(value: Any, rng: random.Random) -> Any:
    """``value`` (JSON) with one node somewhere in it replaced by a value of another type."""
    nodes: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        for key, child in node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ():
            nodes.append((node, key))
            walk(child)

    walk(value)
    if nodes:
        parent, key = rng.choice(nodes)
        parent[key] = rng.choice(WRONG)
    return value


def _event_field(answer: Answer, rng: random.Random) -> Answer:
    """One event (or the reply) with one of its fields, at any depth, of the wrong type."""
    at = rng.randrange(0, len(answer.pieces))
    piece = answer.pieces[at]
    if answer.family in FRAMED and answer.stream:
        return _frames_payload(lambda payload, name: _mutate(payload, rng), only=at)(answer, rng)
    head, sep, data = piece.partition(b"data: ") if answer.stream else (b"", b"", piece)
    try:
        value = json.loads(data)
    except ValueError:
        return answer
    changed = head + sep + json.dumps(_mutate(value, rng)).encode() + (b"\n\n" if answer.stream else b"")
    return replace(answer, pieces=[*answer.pieces[:at], changed, *answer.pieces[at + 1 :]])


def _sse_instead(answer: Answer, rng: random.Random) -> Answer:
    from support.looping_cloud import anthropic_events

    events = [b"data: " + json.dumps(e).encode() + b"\n\n" for e in anthropic_events("UNJUDGED_sse")]
    return replace(answer, pieces=events) if answer.stream else answer


FAULTS: dict[str, tuple[tuple[str, ...] | None, Fault]] = {
    "cut": (None, _cut),
    "cut-in-event": (None, _cut_in_event),
    "bytewise": (None, _bytewise),
    "status-201": (None, _status(201)),
    "status-203": (None, _status(203)),
    "status-206": (None, _status(206)),
    "status-400": (None, _status(400)),
    "status-500": (None, _status(500)),
    "status-503": (None, _status(503)),
    "labelled-json": (None, _labelled(JSON)),
    "labelled-sse": (None, _labelled(SSE)),
    "labelled-eventstream": (None, _labelled(CONTENT_TYPE)),
    "labelled-text": (None, _labelled("text/plain")),
    "unlabelled": (None, _labelled("")),
    "stream-answered-whole": (None, _as_unary),
    "json-array": (None, _json_array),
    "bom": (None, _bom),
    "stall": (None, _stall),
    "reset": (None, _reset),
    "empty": (None, _empty),
    "every-event-twice": (None, _repeat_events),
    "junk-between": (SSE_FAMILIES, _junk_between),
    "chat-choice-1": (("chat",), _chat_choice(1)),
    "chat-choice-str": (("chat",), _chat_choice("0")),
    "chat-choice-float": (("chat",), _chat_choice(0.0)),
    "chat-error-null": (("chat",), _chat_error_key),
    "event-named-error": (("chat", "gemini"), _event_named_error),
    "anthropic-index-str": (("anthropic",), _anthropic_index("0")),
    "anthropic-index-float": (("anthropic",), _anthropic_index(0.0)),
    "anthropic-index-bool": (("anthropic",), _anthropic_index(True)),
    "gemini-raw-line": (("gemini",), _gemini_raw_line),
    "gemini-lines-split": (("gemini",), _gemini_lines_split),
    "frame-checksum": (FRAMED, lambda a, r: _frame_at(a, r, _flip)),
    "frame-zero-length": (FRAMED, lambda a, r: _frame_at(a, r, lambda raw: b"\x00" * 16)),
    "frame-2-gib": (FRAMED, lambda a, r: _frame_at(a, r, _prelude(2**31))),
    "frame-header-type": (FRAMED, lambda a, r: _frame_at(a, r, _with_header(42, b"x"))),
    "frame-header-bytes": (FRAMED, lambda a, r: _frame_at(a, r, _with_header(6, struct.pack(">H", 5) + b"chunk"))),
    "frame-payload-not-utf8": (FRAMED, lambda a, r: _frame_at(a, r, lambda raw: frame("chunk", b"\xff\xfe"))),
    "frame-chunk-not-base64": (
        ("bedrock",),
        lambda a, r: _frame_at(a, r, lambda raw: frame("chunk", b'{"bytes": "!!not base64!!"}')),
    ),
    "frames-index-str": (FRAMED, _frames_payload(_index_as("0"))),
    "frames-index-float": (FRAMED, _frames_payload(_index_as(0.0))),
    "frames-index-bool": (FRAMED, _frames_payload(_index_as(True))),
    "sse-instead-of-frames": (FRAMED, _sse_instead),
    "event-field-wrong-type": (None, _event_field),
}


def applicable(family: str) -> list[str]:
    return [name for name, (families, _) in FAULTS.items() if families is None or family in families]


# --- how a stream a client got ends -------------------------------------------------------------------


def ends_well(family: str, body: bytes) -> bool:
    """A 2xx stream reply ends as its protocol's streams end (whatever content type it came
    under): every frame whole and the last its end or an exception (event streams), or the
    last event the protocol's terminal or error event (SSE), nothing cut short after it."""
    if family in FRAMED:
        return _frames_end_well(family, body)
    return _sse_ends_well(family, body)


def _frames_end_well(family: str, body: bytes) -> bool:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    messages = []
    try:
        messages = list(buffer)
    except Exception:
        return False
    if not messages or sum(m.prelude.total_length for m in messages) != len(body):
        return False
    last = messages[-1]
    if last.headers.get(":message-type") == "exception":
        return True
    name = last.headers.get(":event-type")
    if family == "converse" or name != "chunk":
        return name == "metadata"
    inner = json.loads(base64.b64decode(json.loads(bytes(last.payload))["bytes"]))
    return inner.get("type") == "message_stop"


def _sse_ends_well(family: str, body: bytes) -> bool:
    body = body.replace(b"\r\n", b"\n")
    if not body.endswith(b"\n\n"):
        return False
    events = [e for e in body.split(b"\n\n") if e.strip()]
    datas = [b"\n".join(line[5:].lstrip(b" ") for line in e.split(b"\n") if line.startswith(b"data:")) for e in events]
    datas = [d for d in datas if d]
    if not datas:
        return False
    last = datas[-1]
    if last == b"[DONE]":
        return family in ("chat", "responses")
    try:
        value = json.loads(last)
    except ValueError:
        return False
    if not isinstance(value, dict):
        return False
    if family == "chat":
        return False  # a chat stream ends with [DONE], after its finish or its error chunk
    if family == "anthropic":
        return value.get("type") in ("message_stop", "error")
    if family == "responses":
        return value.get("type") in ("response.completed", "response.failed", "response.incomplete", "error")
    candidates = value.get("candidates")
    finished = isinstance(candidates, list) and any(isinstance(c, dict) and c.get("finishReason") for c in candidates)
    return "error" in value or finished
