"""Reading and amending a Messages answer as a whole: what it says, and a warning put in front
of its text (a unary ``message`` or a complete client-bound event stream).

Used when a turn requires a tool: the model's plain answer is read, and after the retries the
warning that it still has not called the tool goes in front of that answer. Nothing here raises
on an odd body: callers fail open.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.anthropic import events
from gateway.protocols.anthropic.parse import call_of, text_of
from gateway.protocols.base import Answer
from gateway.protocols.sse import json_events

# Blocks that open an assistant turn before its answer (the API wants them first).
_LEADING = frozenset({"thinking", "redacted_thinking"})


def answer(reply: Any) -> Answer | None:
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(content, list):
        return None
    return Answer(any(call_of(b) is not None for b in content), text_of(content))


def prepend_text(reply: dict[str, Any], text: str) -> dict[str, Any]:
    """``text`` and a blank line in front of the first text block, or as a text block of its
    own after any leading thinking when the answer has none."""
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(content, list):
        return reply
    blocks = list(content)
    at = next((i for i, b in enumerate(blocks) if _kind(b) == "text" and isinstance(b.get("text"), str)), None)
    if at is not None:
        blocks[at] = {**blocks[at], "text": f"{text}\n\n{blocks[at]['text']}"}
    else:
        first = next((i for i, b in enumerate(blocks) if _kind(b) not in _LEADING), len(blocks))
        blocks.insert(first, {"type": "text", "text": text})
    return {**reply, "content": blocks}


def corrective(answer_text: str, text: str) -> list[dict[str, Any]]:
    """The model's plain answer, then a user turn with ``text`` (the API refuses empty text
    blocks, so an empty answer is left out; two user turns in a row are read as one)."""
    out: list[dict[str, Any]] = []
    if answer_text.strip():
        out.append({"role": "assistant", "content": [{"type": "text", "text": answer_text}]})
    out.append({"role": "user", "content": [{"type": "text", "text": text}]})
    return out


# --- streamed answers ------------------------------------------------------------------------


def stream_answer(stream: bytes) -> Answer | None:
    """What a complete client-bound stream says; None when it holds an error or nothing readable."""
    calls, parts, readable = False, [], False
    for _raw, data in json_events(stream):
        if data is None:
            continue
        kind = data.get("type")
        if kind == "error":
            return None
        readable = True
        if kind == "content_block_start":
            calls = calls or _kind(data.get("content_block")) == "tool_use"
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and _kind(delta) == "text_delta" and isinstance(delta.get("text"), str):
                parts.append(delta["text"])
    return Answer(calls, "".join(parts)) if readable else None


def stream_prepend_text(stream: bytes, text: str) -> bytes:
    """A ``text_delta`` with ``text`` and a blank line right after the first text block opens;
    without a text block, a whole text block after the last one (no index needs to move)."""
    found = json_events(stream)
    raws = [raw for raw, _ in found]
    blocks = 0
    for position, (_raw, data) in enumerate(found):
        if data is None:
            continue
        kind = data.get("type")
        if kind == "content_block_start":
            blocks += 1
            index = data.get("index")
            if _kind(data.get("content_block")) == "text" and isinstance(index, int):
                delta = {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": f"{text}\n\n"},
                }
                return b"".join([*raws[: position + 1], events.event(delta), *raws[position + 1 :]])
        elif kind == "message_delta":
            return b"".join([*raws[:position], *events.text_block(blocks, text), *raws[position:]])
    return stream


def _kind(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else None
