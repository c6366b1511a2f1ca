"""OpenAI Responses request bodies -> protocol-neutral Conversation.

``input`` is a string (one user message) or a list of items. Items that carry the conversation
become turns: ``message`` (user / system / developer / assistant, text or content parts),
``function_call`` and ``custom_tool_call`` (a model's tool call), ``function_call_output`` and
``custom_tool_call_output`` (the tool's result). Every other item (``reasoning``, built-in tool
calls, ``item_reference`` ...) is forwarded untouched and not part of the trace. Consecutive
tool calls are one assistant turn, as they are one round of parallel calls, even when reasoning
items sit between them. Nothing here raises: what cannot be read is skipped.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.parts import content_reader, raw_text
from gateway.trace.model import Conversation, ToolCall, Turn

_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
CALL_TYPES = frozenset({"function_call", "custom_tool_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
# Parts whose text the model reads; images, files and audio are skipped.
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "refusal"})
_NAMED_TOOLS = frozenset({"function", "custom"})


def input_items(payload: Any) -> list[Any]:
    """The request's items: a string ``input`` is the one user message it stands for."""
    if not isinstance(payload, dict):
        return []
    value = payload.get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return value if isinstance(value, list) else []


def conversation(payload: dict[str, Any], items: list[Any], start: int = 0) -> Conversation:
    """The turns of ``items[start:]``; from the start, ``instructions`` first as the system
    prompt (index -1)."""
    conv = conversation_from_items(items[start:], declared_tools(payload), start)
    instructions = payload.get("instructions")
    if start or not isinstance(instructions, str) or not instructions:
        return conv
    return Conversation((Turn(-1, "system", instructions), *conv.turns), conv.tools)


def conversation_from_items(items: Any, tools: frozenset[str] | None = None, start: int = 0) -> Conversation:
    """``items`` as turns; ``Turn.index`` is the item's position plus ``start`` (a chain's
    earlier items are numbered below 0, so the request's own items keep their positions)."""
    if not isinstance(items, list):
        return Conversation((), tools)
    turns: list[Turn] = []
    calls: list[ToolCall] = []
    calls_at = 0
    for position, item in enumerate(items):
        index = position + start
        kind = item_type(item)
        if kind in CALL_TYPES:
            call = call_from_item(item)
            if call is not None:
                if not calls:
                    calls_at = index
                calls.append(call)
            continue
        if kind == "reasoning":  # thinking between parallel calls does not end their round
            continue
        if calls:
            turns.append(Turn(calls_at, "assistant", "", tuple(calls)))
            calls = []
        turn = _turn(item, kind, index)
        if turn is not None:
            turns.append(turn)
    if calls:
        turns.append(Turn(calls_at, "assistant", "", tuple(calls)))
    return Conversation(tuple(turns), tools)


def item_type(item: Any) -> str | None:
    """An item's type; items without one are messages when they carry a role (the short form)."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def call_from_item(item: Any) -> ToolCall | None:
    """A ``function_call`` or ``custom_tool_call`` item as a ToolCall (None when it has no name)."""
    if not isinstance(item, dict):
        return None
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return None
    call_id = item.get("call_id")
    call_id = call_id if isinstance(call_id, str) else ""
    field = "input" if item.get("type") == "custom_tool_call" else "arguments"
    return ToolCall(call_id, name, raw_text(item.get(field)))


def declared_tools(payload: Any) -> frozenset[str] | None:
    """Names of the declared function and custom tools (namespaced ones included); None when
    there are none, or when an entry cannot be read (an incomplete set would flag real tools
    unknown). Built-in tools (web search, file search, MCP ...) never produce function calls,
    so they are no reason to stop checking function names."""
    tools = payload.get("tools") if isinstance(payload, dict) else None
    if not isinstance(tools, list):
        return None
    names: set[str] = set()
    for entry in tools:
        found = _tool_names(entry) if isinstance(entry, dict) else None
        if found is None:
            return None
        names.update(found)
    return frozenset(names) or None


# A message's text: a string, or its text parts joined by newlines.
content_text = content_reader(_TEXT_PARTS)


def _turn(item: Any, kind: str | None, index: int) -> Turn | None:
    if kind == "message":
        role = item.get("role")
        role = _ROLES.get(role) if isinstance(role, str) else None
        return Turn(index, role, content_text(item.get("content"))) if role else None
    if kind in OUTPUT_TYPES:
        call_id = item.get("call_id")
        return Turn(
            index,
            "tool",
            _output_text(item.get("output")),
            tool_call_id=call_id if isinstance(call_id, str) and call_id else None,
        )
    return None


def _tool_names(entry: dict[str, Any]) -> list[str] | None:
    kind = entry.get("type", "function")
    if not isinstance(kind, str):
        return None
    if kind == "namespace":
        inner = entry.get("tools")
        if not isinstance(inner, list):
            return None
        names = [_tool_names(tool) if isinstance(tool, dict) else None for tool in inner]
        return None if any(n is None for n in names) else [n for group in names if group is not None for n in group]
    if kind not in _NAMED_TOOLS:
        return []  # a built-in tool: no function name to declare
    holder = function_value if isinstance(function_value := entry.get("function"), dict) else entry  # chat-style, seen
    name = holder.get("name")
    return [name] if isinstance(name, str) and name else None


def _output_text(output: Any) -> str:
    if isinstance(output, list):
        return content_text(output)
    return raw_text(output)
