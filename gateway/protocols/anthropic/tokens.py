"""An Anthropic message's text pieces for the savings token estimate: text and thinking
blocks, tool results' content, each ``tool_use`` block's name and input."""

from __future__ import annotations

from typing import Any

from gateway.protocols import usage
from gateway.protocols.base import ItemText
from gateway.protocols.parts import raw_text


def item_text(message: Any) -> ItemText:
    if not isinstance(message, dict):
        return ItemText(False, str(message))
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    texts: list[str] = []
    calls: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            texts.append(raw_text(block))
        elif block.get("type") == "tool_use":
            calls += [str(block.get("name") or ""), raw_text(block.get("input"))]
        elif block.get("type") == "tool_result":
            texts.append(_result(block.get("content")))
        else:
            texts.append(str(block.get("text") or block.get("thinking") or ""))
    return ItemText(message.get("role") == "assistant", "".join(texts), None, tuple(calls))


def _result(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return raw_text(content)


def output_tokens(answer: bytes) -> int | None:
    """The output tokens the upstream reported (a reply, or a stream's ``message_delta``)."""
    return usage.reported(answer, ("usage", "output_tokens"), ("message", "usage", "output_tokens"))
