"""A chat message's text pieces for the savings token estimate: what litellm counts (the
content's text, the author name, each call's function name and arguments)."""

from __future__ import annotations

from typing import Any

from gateway.protocols import usage
from gateway.protocols.base import ItemText


def item_text(message: Any) -> ItemText:
    if not isinstance(message, dict):
        return ItemText(False, str(message))
    calls: list[str] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls += [str(function.get("name") or ""), str(function.get("arguments") or "")]
    name = message.get("name")
    return ItemText(
        message.get("role") == "assistant",
        _text(message.get("content")),
        name if isinstance(name, str) else None,
        tuple(calls),
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: their text
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def output_tokens(answer: bytes) -> int | None:
    """The completion tokens the upstream reported (a reply, or a stream's usage chunk)."""
    return usage.reported(answer, ("usage", "completion_tokens"))
