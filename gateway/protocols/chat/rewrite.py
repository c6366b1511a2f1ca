"""Applying interventions to a chat-completions ``messages`` list: the only place that edits it.

Every function returns a new list; the client's own objects are never mutated, and no message is
dropped or reordered: we only insert or append.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.chat.replies import assistant_message_for, veto_observation
from gateway.protocols.roles.edits import Edits
from gateway.trace.model import ToolCall

Message = dict[str, Any]


def with_messages(payload: dict[str, Any], messages: list[Any]) -> dict[str, Any]:
    """The payload carrying ``messages`` in place of its own."""
    return {**payload, "messages": messages}


# --- warn: the anchor message ----------------------------------------------------------------


def add_anchor(messages: list[Message], text: str, placement: str) -> list[Message]:
    """Put the warning where the model reads it before its next step."""
    if placement == "tool_result" and messages and _role(messages[-1]) in ("tool", "function"):
        return [*messages[:-1], _append_text(messages[-1], text)]
    role = "user" if placement == "user" else "system"
    return [*messages, {"role": role, "content": text}]


def result_index(messages: list[Message], call_id: str, after: int) -> int | None:
    """The tool message answering ``call_id`` after the assistant message at ``after``."""
    for index in range(max(after, 0) + 1, len(messages)):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return index
    return None


def replace_result(messages: list[Message], index: int, text: str, call_id: str) -> list[Message]:
    """A tool message answers one call: the one at ``index`` is the refused call's."""
    return replace_content(messages, index, text)


def veto_exchange(call: ToolCall, observation: str) -> list[Message]:
    """An assistant message with the refused call, and the tool message answering it."""
    return [assistant_message_for([call]), veto_observation(call, observation)]


def corrective(answer: str, text: str) -> list[Message]:
    return [{"role": "assistant", "content": answer}, {"role": "user", "content": text}]


def without_tools(payload: dict[str, Any]) -> dict[str, Any]:
    """Tools off: every tool field dropped but the declarations, with ``tool_choice: none``."""
    dropped = ("tool_choice", "function_call", "functions", "parallel_tool_calls")
    out = {k: v for k, v in payload.items() if k not in dropped}
    if "tools" in out:  # "none" is only accepted next to declared tools
        out["tool_choice"] = "none"
    return out


def replace_content(messages: list[Message], index: int, text: str) -> list[Message]:
    """Swap a tool result for our error observation (a call that should have been vetoed)."""
    out = list(messages)
    out[index] = {**out[index], "content": text}
    return out


def _append_text(message: Message, text: str) -> Message:
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": text}]}
    prefix = content if isinstance(content, str) else ""
    return {**message, "content": f"{prefix}\n\n{text}" if prefix else text}


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


EDITS = Edits(
    add_anchor=add_anchor,
    result_index=result_index,
    replace_result=replace_result,
    veto_exchange=veto_exchange,
    corrective=corrective,
    without_tools=without_tools,
)
