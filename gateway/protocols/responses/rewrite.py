"""Applying interventions to a Responses request: the only place that edits its ``input``.

Every function returns new lists and new items; the client's objects are never mutated, and no
item is dropped or reordered: we only insert, append or replace a result's ``output``.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.parts import raw_text
from gateway.protocols.responses.parse import OUTPUT_TYPES, item_type
from gateway.trace.model import ToolCall

Item = dict[str, Any]


def with_items(payload: dict[str, Any], items: list[Any]) -> dict[str, Any]:
    """The payload carrying ``items`` as its ``input`` (a string input becomes the list form)."""
    return {**payload, "input": items}


def add_anchor(items: list[Any], text: str, placement: str) -> list[Any]:
    """Warn: an input message the model reads before its next step.

    ``tool_result`` appends the text to the last item when it is a tool's output; ``user``
    is a user message; ``system`` (and the fallback of ``tool_result``) is an instruction
    message, in the role the client itself uses for instructions (``developer`` unless it
    writes ``system`` messages), so the upstream sees nothing it was not already sent."""
    if placement == "tool_result" and items and item_type(items[-1]) in OUTPUT_TYPES:
        return [*items[:-1], _append_output(items[-1], text)]
    role = "user" if placement == "user" else _instruction_role(items)
    return [*items, {"type": "message", "role": role, "content": text}]


def result_index(items: list[Any], call_id: str, after: int) -> int | None:
    """The output item answering ``call_id`` after the item at ``after``."""
    for index in range(max(after, 0) + 1, len(items)):
        item = items[index]
        if item_type(item) in OUTPUT_TYPES and item.get("call_id") == call_id:
            return index
    return None


def replace_result(items: list[Any], index: int, text: str, call_id: str = "") -> list[Any]:
    """An executed call that should have been vetoed: its output becomes our observation (an
    output item answers one call: the one at ``index`` is the refused call's)."""
    if not 0 <= index < len(items) or not isinstance(items[index], dict):
        return items
    out = list(items)
    out[index] = {**out[index], "output": text}
    return out


def veto_exchange(call: ToolCall, observation: str, custom: bool = False) -> list[Item]:
    """The refused call and the gateway's error observation in place of its output."""
    if custom:
        return [
            {"type": "custom_tool_call", "call_id": call.id, "name": call.name, "input": call.arguments},
            {"type": "custom_tool_call_output", "call_id": call.id, "output": observation},
        ]
    return [
        {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.id, "output": observation},
    ]


def corrective(answer: str, text: str) -> list[Item]:
    return [
        {"type": "message", "role": "assistant", "content": answer},
        {"type": "message", "role": "user", "content": text},
    ]


def without_tools(payload: dict[str, Any]) -> dict[str, Any]:
    """Ask for a plain text answer: the tools stay declared (the history names them) but the
    model may not call one."""
    return {**payload, "tool_choice": "none"}


def _append_output(item: Item, text: str) -> Item:
    output = item.get("output")
    if isinstance(output, list):
        return {**item, "output": [*output, {"type": "input_text", "text": text}]}
    prefix = raw_text(output)  # an object output (off-spec) is kept, as its text
    return {**item, "output": f"{prefix}\n\n{text}" if prefix else text}


def _instruction_role(items: list[Any]) -> str:
    for item in items:
        if isinstance(item, dict) and item.get("role") == "system" and item_type(item) == "message":
            return "system"
    return "developer"
