"""A Gemini content's text pieces for the savings token estimate: text parts, function
responses, each ``functionCall``'s name and args. The model's role is ``model``."""

from __future__ import annotations

from typing import Any

from gateway.protocols import usage
from gateway.protocols.base import ItemText
from gateway.protocols.parts import raw_text


def item_text(content: Any) -> ItemText:
    if not isinstance(content, dict):
        return ItemText(False, str(content))
    texts: list[str] = []
    calls: list[str] = []
    for part in content.get("parts") or ():
        if not isinstance(part, dict):
            continue
        if isinstance(call := part.get("functionCall"), dict):
            calls += [str(call.get("name") or ""), raw_text(call.get("args"))]
        elif isinstance(answer := part.get("functionResponse"), dict):
            texts.append(raw_text(answer.get("response")))
        else:
            texts.append(str(part.get("text") or ""))
    return ItemText(content.get("role") == "model", "".join(texts), None, tuple(calls))


def output_tokens(answer: bytes) -> int | None:
    """The candidates' tokens the upstream reported (a reply, or a stream's last chunk)."""
    return usage.reported(answer, ("usageMetadata", "candidatesTokenCount"))
