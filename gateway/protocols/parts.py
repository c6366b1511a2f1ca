"""Text the two OpenAI protocols (chat, responses) read out of request bodies the same way.

Agents send whatever shape the API ever accepted, and some it never did: nothing here raises,
what cannot be read is text the trace does not need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

__all__ = ["content_reader", "raw_text"]


def content_reader(text_parts: frozenset[str]) -> Callable[[Any], str]:
    """A protocol's ``content_text``: a message's text is a string, or its text parts joined by
    newlines. A part is text when it is a string, or has a string ``text`` and either no type or
    one in ``text_parts`` (the parts the model reads: images, files and audio are skipped).

    A factory rather than a function taking the set: parsing runs for every message of every
    request, and this keeps each protocol's call one plain function call, as it was."""

    def content_text(content: Any) -> str:
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(_part_texts(content, text_parts))
        return ""

    return content_text


def _part_texts(parts: Iterable[Any], text_parts: frozenset[str]) -> Iterable[str]:
    for part in parts:
        if isinstance(part, str):
            yield part
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            kind = part.get("type")
            if kind is None or (isinstance(kind, str) and kind in text_parts):
                yield part["text"]


def raw_text(value: Any) -> str:
    """Raw text (tool arguments, a tool's output); an object some clients send instead of a
    string is serialized."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return str(value)
