"""OpenAI Chat Completions request bodies -> protocol-neutral Conversation.

Agents send every shape the API ever accepted (content parts, null content, legacy
``function_call`` / ``role: function``, arguments as objects...), and some send shapes it never
did. Nothing here raises on a body: what cannot be understood is skipped, because the gateway must
forward traffic it cannot read rather than break it.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.parts import content_reader, raw_text
from gateway.trace.model import Conversation, ToolCall, Turn

_ROLES = {
    "system": "system",
    "developer": "system",  # o1-style system prompts
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",  # legacy function results
}
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})


def items(payload: dict[str, Any]) -> list[Any]:
    """The request's ``messages`` ([] when absent or not a list)."""
    messages = payload.get("messages")
    return messages if isinstance(messages, list) else []


def conversation(payload: dict[str, Any], items: list[Any], start: int = 0) -> Conversation:
    """The turns of ``items[start:]`` (``Requests.conversation``): chat keeps its system prompt
    among the messages, so there is nothing outside them to read."""
    turns = tuple(t for i in range(start, len(items)) if (t := turn_from_message(items[i], i)) is not None)
    return Conversation(turns, declared_tools(payload))


def conversation_from_body(body: Any) -> Conversation:
    if not isinstance(body, dict):
        return Conversation(())
    return conversation_from_messages(body.get("messages"), declared_tools(body))


def conversation_from_messages(messages: Any, tools: frozenset[str] | None = None) -> Conversation:
    if not isinstance(messages, list):
        return Conversation((), tools)
    turns = tuple(t for i, m in enumerate(messages) if (t := turn_from_message(m, i)) is not None)
    return Conversation(turns, tools)


def turn_from_message(message: Any, index: int) -> Turn | None:
    # Runs for every message of every request: positional Turn arguments and one dict lookup per
    # field keep it cheap (a 5,000-message conversation is parsed on each request).
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    role = _ROLES.get(role) if type(role) is str else None
    if role is None:
        return None
    content = message.get("content")
    text = content if type(content) is str else content_text(content)
    if role == "tool":
        if isinstance(content, dict):  # off-spec but seen: a result object instead of text
            text = raw_text(content)
        call_id, name, is_error = message.get("tool_call_id"), message.get("name"), message.get("is_error")
        return Turn(
            index,
            role,
            text,
            (),
            call_id if type(call_id) is str and call_id else None,
            name if type(name) is str and name else None,
            is_error if type(is_error) is bool else None,
        )
    if role == "assistant":
        return Turn(index, role, text, tool_calls_from_message(message))
    return Turn(index, role, text)


def tool_calls_from_message(message: Any) -> tuple[ToolCall, ...]:
    """The tool calls of an assistant message (request history or a response's choice):
    ``tool_calls`` entries, or the legacy ``function_call``."""
    if not isinstance(message, dict):
        return ()
    calls = message.get("tool_calls")
    found = [c for c in map(_tool_call, calls) if c is not None] if isinstance(calls, list) else []
    if not found:
        legacy = _function(message.get("function_call"), "")
        if legacy is not None:
            found.append(legacy)
    return tuple(found)


def declared_tools(body: dict[str, Any]) -> frozenset[str] | None:
    """Names in ``tools`` (and legacy ``functions``); None when none are declared, or when an
    entry's name cannot be read (the set would be incomplete and flag real tools unknown)."""
    names: set[str] = set()
    for entries, legacy in ((body.get("tools"), False), (body.get("functions"), True)):
        if entries is None:
            continue
        if not isinstance(entries, list):
            return None
        for entry in entries:
            name = _declared_name(entry, legacy)
            if name is None:
                return None
            names.add(name)
    return frozenset(names) or None


# A message's text: a string, or its text parts joined by newlines (images etc. skipped).
content_text = content_reader(_TEXT_PARTS)


def _tool_call(entry: Any) -> ToolCall | None:
    if not isinstance(entry, dict):
        return None
    call_id = id_value if isinstance(id_value := entry.get("id"), str) else ""
    kind = entry.get("type")
    if kind == "custom" and isinstance(entry.get("custom"), dict):  # free-form custom tools
        custom = entry["custom"]
        name = custom.get("name")
        return ToolCall(call_id, name, raw_text(custom.get("input"))) if isinstance(name, str) and name else None
    return _function(entry.get("function"), call_id)


def _function(fn: Any, call_id: str) -> ToolCall | None:
    if not isinstance(fn, dict):
        return None
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        return None
    return ToolCall(call_id, name, raw_text(fn.get("arguments")))


def _declared_name(entry: Any, legacy: bool) -> str | None:
    if not isinstance(entry, dict):
        return None
    if legacy:
        holder: Any = entry
    else:
        kind = entry.get("type", "function")
        holder = entry.get(kind) if isinstance(kind, str) else None
    name = holder.get("name") if isinstance(holder, dict) else None
    return name if isinstance(name, str) and name else None
