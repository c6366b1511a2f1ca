"""Converse request bodies -> protocol-neutral Conversation.

``messages`` is a list of ``{"role": "user" | "assistant", "content": [block, ...]}``; a block is
a one-key union: ``{"text"}``, ``{"toolUse": {"toolUseId", "name", "input"}}``, ``{"toolResult":
{"toolUseId", "content": [{"text"} | {"json"} | ...], "status"}}``, ``{"reasoningContent"}``,
``{"image"}`` and more. An assistant turn's ``toolUse`` blocks are its calls; the next user turn
answers them with ``toolResult`` blocks, one neutral ``tool`` turn each, sharing the message's
index. ``system`` (a list of ``{"text"}`` blocks) is a system turn with index -1; tools are
``toolConfig.tools[].toolSpec.name``. Nothing here raises on a body: what cannot be read is
skipped, so traffic the gateway cannot read still flows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.trace.model import Conversation, ToolCall, Turn
from gateway.wire import codec

# The union members a Converse content block is one of (its keys name its kind; it has no "type").
_MEMBERS = frozenset({"text", "toolUse", "toolResult", "reasoningContent", "image", "document", "cachePoint"})


def messages_of(payload: Any) -> list[Any]:
    """The request's ``messages`` ([] when absent or not a list)."""
    messages = payload.get("messages") if isinstance(payload, dict) else None
    return messages if isinstance(messages, list) else []


def conversation(payload: Any, messages: Any, start: int = 0) -> Conversation:
    """The turns of ``messages[start:]``, with the declared tools; from the start, the system
    prompt first."""
    payload = payload if isinstance(payload, dict) else {}
    turns: list[Turn] = []
    system = text_of(payload.get("system")) if start == 0 else ""
    if system:
        turns.append(Turn(-1, "system", system))
    if isinstance(messages, list):
        for index in range(max(start, 0), len(messages)):
            turns.extend(turns_of(messages[index], index))
    return Conversation(tuple(turns), declared_tools(payload))


def turns_of(message: Any, index: int) -> Iterator[Turn]:
    if not isinstance(message, dict):
        return
    role, content = message.get("role"), blocks_of(message)
    if role == "assistant":
        yield Turn(index, "assistant", text_of(content), tuple(calls_of(content)))
    elif role == "user":
        results = [b["toolResult"] for b in content if isinstance(b.get("toolResult"), dict)]
        if not results:
            yield Turn(index, "user", text_of(content))
            return
        # A user turn carrying tool results continues the run: its other text is not a new prompt.
        for result in results:
            yield _result_turn(result, index)


def blocks_of(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def text_of(content: Any) -> str:
    """The ``text`` blocks of a block list joined by newlines (reasoning, images skipped)."""
    if not isinstance(content, list):
        return ""
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


def call_of(block: Any) -> ToolCall | None:
    """A ``toolUse`` block as a neutral call; its ``input`` document becomes the arguments text."""
    use = block.get("toolUse") if isinstance(block, dict) else None
    if not isinstance(use, dict):
        return None
    name, ident = use.get("name"), use.get("toolUseId")
    if not isinstance(name, str) or not name:
        return None
    return ToolCall(ident if isinstance(ident, str) else "", name, arguments_text(use.get("input")))


def calls_of(content: list[dict[str, Any]]) -> Iterator[ToolCall]:
    for block in content:
        call = call_of(block)
        if call is not None:
            yield call


def arguments_text(value: Any) -> str:
    if isinstance(value, str):  # off-spec: a client re-sending the streamed JSON text
        return value
    if value is None:
        return "{}"
    try:
        return codec.dumps(value).decode()
    except (TypeError, ValueError, RecursionError):
        return str(value)


def result_text(content: Any) -> str:
    """A ``toolResult``'s content blocks as text: its texts, and its JSON documents as JSON."""
    if not isinstance(content, list):
        return ""
    pieces = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif "json" in block:
            pieces.append(arguments_text(block["json"]))
    return "\n".join(pieces)


def declared_tools(payload: dict[str, Any]) -> frozenset[str] | None:
    """Names of every tool in ``toolConfig.tools`` (``toolSpec`` and ``systemTool`` entries;
    ``cachePoint`` markers are no tools). None when none are declared or a name cannot be read
    (an incomplete set would flag real tools)."""
    config = payload.get("toolConfig")
    tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list):
        return None
    names: set[str] = set()
    for entry in tools:
        if isinstance(entry, dict) and "cachePoint" in entry:
            continue
        spec = (
            next((entry[k] for k in ("toolSpec", "systemTool") if k in entry), None)
            if isinstance(entry, dict)
            else None
        )
        name = spec.get("name") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not name:
            return None
        names.add(name)
    return frozenset(names) or None


def is_converse_body(body: Any) -> bool:
    """A recorded Converse body: ``messages`` whose content blocks are one-key unions (no
    ``type``, as Anthropic's and OpenAI's blocks have), or a ``toolConfig`` / ``inferenceConfig``."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return False
    if isinstance(body.get("toolConfig"), dict) or isinstance(body.get("inferenceConfig"), dict):
        return True
    blocks = [b for m in messages for b in blocks_of(m)]
    return bool(blocks) and all("type" not in b and bool(_MEMBERS & b.keys()) for b in blocks)


def _result_turn(result: dict[str, Any], index: int) -> Turn:
    ident, status = result.get("toolUseId"), result.get("status")
    return Turn(
        index,
        "tool",
        result_text(result.get("content")),
        (),
        ident if isinstance(ident, str) and ident else None,
        None,
        True if status == "error" else None,
    )
