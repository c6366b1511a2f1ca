"""Tokens an upstream reported for one answer, read from its JSON reply or its event stream.

Each adapter names where its protocol puts the count (``dig`` paths); this module only walks the
body, so no wire format is known here. Never raises: an unreadable body reports nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.protocols.sse import SSEDecoder
from gateway.wire import codec

Path = tuple[str, ...]


def reported(body: bytes, *paths: Path) -> int | None:
    """The last count found at any of ``paths`` in the reply or its events (a stream's final
    usage comes last and supersedes earlier partial counts); None when there is none."""
    found = None
    try:
        for data in _payloads(body):
            for path in paths:
                value = dig(data, path)
                if type(value) is int and value >= 0:
                    found = value
    except Exception:
        return found
    return found


def dig(data: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _payloads(body: bytes) -> Iterator[Any]:
    if body.lstrip()[:1] == b"{":
        yield codec.loads(body)
        return
    decoder = SSEDecoder()
    for event in [*decoder.feed(body), *decoder.flush()]:
        if event.data and event.data.startswith("{"):
            yield codec.loads(event.data)


def estimated(text: str) -> int:
    """About four characters a token: the count when the upstream reported none."""
    return (len(text) + 3) // 4


def add_usage(total: Any, more: Any) -> Any:
    """Two usage objects summed field by field (nested token details too): what a client is
    told a stream cost when several upstream rounds (re-asks) answered it. Counters add up; any
    other field keeps the first non-null value."""
    if not isinstance(total, dict) or not isinstance(more, dict):
        return more if total is None else total
    merged = dict(total)
    for key, value in more.items():
        old = merged.get(key)
        if isinstance(value, (int, float)) and isinstance(old, (int, float)) and not isinstance(value, bool):
            merged[key] = old + value
        elif isinstance(value, dict) and isinstance(old, dict):
            merged[key] = add_usage(old, value)
        else:
            merged[key] = value if old is None else old
    return merged
