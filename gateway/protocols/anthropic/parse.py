"""Anthropic Messages request bodies -> protocol-neutral Conversation.

A message's ``content`` is a string or a list of blocks. Assistant turns carry ``tool_use``
blocks (the calls); the next user turn answers them with ``tool_result`` blocks, which become one
neutral ``tool`` turn each, all sharing the message's index. The ``system`` prompt lives outside
``messages``: it is a system turn with index -1. Nothing here raises on a body: what cannot be
understood is skipped, so traffic the gateway cannot read still flows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.trace.model import Conversation, ToolCall, Turn
from gateway.wire import codec

# Blocks whose text the model reads as prose; images, documents, thinking are skipped.
_TEXT_BLOCKS = frozenset({"text"})


def conversation(payload: Any, messages: Any, start: int = 0) -> Conversation:
    """The turns of ``messages[start:]`` (the payload's own, or an edited copy), with the
    payload's declared tools; from the start, the system prompt first."""
    payload = payload if isinstance(payload, dict) else {}
    turns: list[Turn] = []
    system = system_text(payload.get("system")) if start == 0 else ""
    if system:
        turns.append(Turn(-1, "system", system))
    if isinstance(messages, list):
        for index in range(max(start, 0), len(messages)):
            turns.extend(turns_of(messages[index], index))
    return Conversation(tuple(turns), declared_tools(payload))


def turns_of(message: Any, index: int) -> Iterator[Turn]:
    if not isinstance(message, dict):
        return
    role, content = message.get("role"), message.get("content")
    if role == "assistant":
        blocks = content if isinstance(content, list) else ()
        yield Turn(index, "assistant", text_of(content), tuple(_calls(blocks)))
    elif role == "user":
        results = [b for b in content if _is(b, "tool_result")] if isinstance(content, list) else []
        if not results:
            yield Turn(index, "user", text_of(content))
            return
        # A user message carrying tool results continues the run: its other text (framework
        # reminders, notes) is not a new prompt, so it never resets the run's scope.
        for block in results:
            yield _result_turn(block, index)
    elif role == "system":  # not valid in ``messages``; the gateway's own system notes use it
        yield Turn(index, "system", text_of(content))


def text_of(content: Any) -> str:
    """A string, or the text blocks of a block list joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and _kind(b) in _TEXT_BLOCKS and isinstance(b.get("text"), str)
    )


def _kind(block: dict[str, Any]) -> str | None:
    """A block's ``type`` (``text`` when absent); None for one that is no string (the API refuses
    such a block: read here as no block of any kind, never an error)."""
    kind = block.get("type", "text")
    return kind if isinstance(kind, str) else None


def system_text(system: Any) -> str:
    return text_of(system)


def call_of(block: Any) -> ToolCall | None:
    """A ``tool_use`` block as a neutral call; its ``input`` object becomes the arguments text."""
    if not _is(block, "tool_use"):
        return None
    name = block.get("name")
    if not isinstance(name, str) or not name:
        return None
    ident = block.get("id")
    return ToolCall(ident if isinstance(ident, str) else "", name, arguments_text(block.get("input")))


def arguments_text(value: Any) -> str:
    if isinstance(value, str):  # off-spec: some clients re-send the streamed JSON text
        return value
    if value is None:
        return "{}"
    try:
        return codec.dumps(value).decode()
    except (TypeError, ValueError, RecursionError):  # not JSON at all (a client-side object)
        return str(value)


def declared_tools(payload: dict[str, Any]) -> frozenset[str] | None:
    """Names of every entry in ``tools``: custom tools, Anthropic-defined client tools (bash,
    text editor) and server tools (web search) alike, so no call is taken for unknown. None when
    none are declared or a name cannot be read (an incomplete set would flag real tools)."""
    tools = payload.get("tools")
    if not isinstance(tools, list):
        return None
    names: set[str] = set()
    for entry in tools:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            return None
        names.add(name)
    return frozenset(names) or None


def _calls(blocks: Any) -> Iterator[ToolCall]:
    for block in blocks:
        call = call_of(block)
        if call is not None:
            yield call


def _result_turn(block: dict[str, Any], index: int) -> Turn:
    ident, flag = block.get("tool_use_id"), block.get("is_error")
    return Turn(
        index,
        "tool",
        text_of(block.get("content")),
        (),
        ident if isinstance(ident, str) and ident else None,
        None,
        flag if isinstance(flag, bool) else None,
    )


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def is_messages_body(body: Any) -> bool:
    """A recorded Anthropic Messages body: ``messages`` with a top-level ``system``, tools
    declared with ``input_schema``, or ``tool_use`` / ``tool_result`` content blocks (chat
    bodies have none of these)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return False
    if "system" in body:
        return True
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    return any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
    )


def messages_of(payload: Any) -> list[Any]:
    """The request's ``messages`` ([] when absent or not a list)."""
    messages = payload.get("messages") if isinstance(payload, dict) else None
    return messages if isinstance(messages, list) else []


def user(payload: dict[str, Any]) -> str | None:
    """``metadata.user_id``: the Messages API's only end-user field (Claude Code puts its
    session's id in it), the counterpart of OpenAI's ``user``."""
    metadata = payload.get("metadata")
    found = metadata.get("user_id") if isinstance(metadata, dict) else None
    return found if isinstance(found, str) and found else None
