"""Argument-only events read by their bytes.

A model streams a tool call's arguments as a run of events that differ only in the argument
text: ``{"index": k, "function": {"arguments": "..."}}`` and nothing else in their choice. From
the first such event, ``around`` learns the bytes before and after that text; an event with the
same bytes around one JSON string is the same event with other text (``text_between``), so it
is read by decoding that string alone. ``around`` proves where the text sits: the event with a
marker string in its place parses to the marker as the call's arguments. Any other byte, or a
middle that is not one JSON string, means the event is read in full.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["around", "is_argument_entry", "text_between"]

_ENTRY_KEYS = frozenset({"index", "function"})
_FUNCTION_KEYS = frozenset({"arguments"})
_MARKER_TEXT = "\u0000loopguard-arguments\u0000"
_MARKER = orjson.dumps(_MARKER_TEXT)


def is_argument_entry(entry: Any) -> bool:
    """A ``tool_calls`` entry that only adds argument text to the call at its index."""
    function = entry.get("function") if isinstance(entry, dict) else None
    return (
        isinstance(function, dict)
        and entry.keys() == _ENTRY_KEYS
        and function.keys() == _FUNCTION_KEYS
        and type(entry["index"]) is int
        and isinstance(function["arguments"], str)
    )


def around(event: bytes, end: int, text: str) -> tuple[bytes, bytes] | None:
    """(bytes before, bytes after) ``text`` in ``event``: one ``data:`` line whose data ends at
    ``end`` (a blank line, if the event has one, follows), parsed to a chunk whose only choice
    adds ``text`` to one call. None when the text is written with other escapes than ours, or
    more than once, or the probe does not find it there."""
    if not text or not event.startswith(b"data: ") or event.find(b"\n", 0, end) >= 0:
        return None
    try:
        encoded = orjson.dumps(text)
    except TypeError:  # a lone surrogate: the slow path re-encodes the event instead
        return None
    at = event.find(encoded, 0, end)
    if at < 0 or event.find(encoded, at + 1, end) >= 0:
        return None
    prefix, suffix = event[:at], event[at + len(encoded) :]
    try:
        probe = orjson.loads(prefix[6:] + _MARKER + suffix[: len(suffix) - (len(event) - end)])
        marked = probe["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
    except (orjson.JSONDecodeError, LookupError, TypeError):
        return None
    return (prefix, suffix) if marked == _MARKER_TEXT else None


def text_between(event: bytes, prefix: bytes, suffix: bytes) -> str | None:
    """The argument text of an event with exactly ``prefix`` and ``suffix`` around one JSON
    string, or None."""
    if not (event.startswith(prefix) and event.endswith(suffix)) or len(event) < len(prefix) + len(suffix):
        return None
    try:
        text = orjson.loads(event[len(prefix) : len(event) - len(suffix)])
    except orjson.JSONDecodeError:
        return None
    return text if type(text) is str else None
