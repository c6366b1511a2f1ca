"""A Responses input item's text pieces for the savings token estimate: a message's text
parts, a call's name and arguments (the model wrote it), a call output's text."""

from __future__ import annotations

from typing import Any

from gateway.protocols import usage
from gateway.protocols.base import ItemText
from gateway.protocols.parts import raw_text
from gateway.protocols.responses.parse import CALL_TYPES, OUTPUT_TYPES, content_text


def item_text(item: Any) -> ItemText:
    if not isinstance(item, dict):
        return ItemText(False, str(item))
    kind = item.get("type")
    if kind in CALL_TYPES:
        return ItemText(
            True, "", None, (str(item.get("name") or ""), raw_text(item.get("arguments", item.get("input"))))
        )
    if kind in OUTPUT_TYPES:
        return ItemText(False, raw_text(item.get("output")))
    return ItemText(item.get("role") == "assistant", content_text(item.get("content")))


def output_tokens(answer: bytes) -> int | None:
    """The output tokens the upstream reported (a reply, or a stream's closing response)."""
    return usage.reported(answer, ("usage", "output_tokens"), ("response", "usage", "output_tokens"))
