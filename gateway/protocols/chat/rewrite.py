"""Applying interventions to a chat-completions ``messages`` list: the only place that edits it.

Every function returns a new list; the client's own objects are never mutated, and no message is
dropped or reordered: we only insert or append.
"""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]


# --- warn: the anchor message ----------------------------------------------------------------


def add_anchor(messages: list[Message], text: str, placement: str) -> list[Message]:
    """Put the warning where the model reads it before its next step."""
    if placement == "tool_result" and messages and _role(messages[-1]) in ("tool", "function"):
        return [*messages[:-1], _append_text(messages[-1], text)]
    role = "user" if placement == "user" else "system"
    return [*messages, {"role": role, "content": text}]


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
