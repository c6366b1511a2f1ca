"""A Converse message's text pieces for the savings token estimate, and the output tokens an
answer reported (``usage.outputTokens``: a reply's, or a stream's ``metadata`` event's)."""

from __future__ import annotations

from typing import Any

from gateway.protocols import usage
from gateway.protocols.base import ItemText
from gateway.protocols.converse import events
from gateway.protocols.converse.parse import blocks_of, result_text
from gateway.protocols.parts import raw_text

_OUTPUT = ("usage", "outputTokens")


def item_text(message: Any) -> ItemText:
    if not isinstance(message, dict):
        return ItemText(False, str(message))
    texts: list[str] = []
    calls: list[str] = []
    for block in blocks_of(message):
        if isinstance(use := block.get("toolUse"), dict):
            calls += [str(use.get("name") or ""), raw_text(use.get("input"))]
        elif isinstance(result := block.get("toolResult"), dict):
            texts.append(result_text(result.get("content")))
        elif isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(reasoning := block.get("reasoningContent"), dict):
            said = reasoning.get("reasoningText")
            texts.append(str(said.get("text") or "") if isinstance(said, dict) else "")
    return ItemText(message.get("role") == "assistant", "".join(texts), None, tuple(calls))


def output_tokens(answer: bytes) -> int | None:
    """The output tokens the upstream reported: a JSON reply's, or an event stream's last."""
    if answer.lstrip()[:1] == b"{":
        return usage.reported(answer, _OUTPUT)
    found = None
    for name, data in events.read(answer):
        if name == "metadata":
            value = usage.dig(data, _OUTPUT)
            found = value if type(value) is int and value >= 0 else found
    return found
