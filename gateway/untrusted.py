"""Text the gateway did not write, made safe before it reaches a log line, an audit event, a
metric label or a state key.

A client or an upstream chooses these strings: a JSON body may carry a lone surrogate escape
(``"\\ud800"``), which Python keeps but UTF-8 cannot encode (orjson, a log file, Redis and the
Prometheus text format all refuse it), or a value of any length. Either must never make a log
line raise (the guard would fail open), lose an audit event, or grow a metric or a log without
bound. The rule: escape what cannot be encoded, cap the length, and draw label values from a
bounded set (``other`` beyond it). Session ids the client did not name as such (an end user, a
metadata field) are hashed: they identify people and devices.

Rendering stays fast for the common case: callers serialize first and repair only when that
fails or the result is oversized (:func:`dumps`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

# Longest string value kept in a repaired log line or audit event; longer ones are cut with a marker.
MAX_TEXT = 1024
# A rendered line (or event) larger than this is repaired: every string in it capped.
MAX_LINE_BYTES = 64 * 1024
# Label values a metric keeps per label before the rest are counted as "other".
MAX_LABEL_VALUES = 100
MAX_LABEL_CHARS = 100
OTHER = "other"


def text(value: str, limit: int = MAX_TEXT) -> str:
    """``value`` with lone surrogates escaped (``\\ud800`` as six characters) and cut to
    ``limit`` characters (a marker says how many were dropped)."""
    if len(value) > limit:
        value = f"{value[:limit]}...[{len(value) - limit} more]"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def clean(value: Any, limit: int = MAX_TEXT) -> Any:
    """Every string in a JSON-like value (keys included) made safe with :func:`text`."""
    if isinstance(value, str):
        return text(value, limit)
    if isinstance(value, dict):
        return {text(k, limit) if isinstance(k, str) else str(k): clean(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v, limit) for v in value]
    return value


def dumps(value: Any, max_bytes: int = MAX_LINE_BYTES) -> bytes:
    """JSON bytes that never raise for content: orjson first (the common case costs nothing
    more); a value it refuses (a lone surrogate) or that renders larger than ``max_bytes`` is
    cleaned and rendered again; unknown types render as their ``repr``."""
    try:
        out = orjson.dumps(value, default=repr)
    except TypeError:
        return orjson.dumps(clean(value), default=_safe_repr)
    if len(out) > max_bytes:
        return orjson.dumps(clean(value), default=_safe_repr)
    return out


def _safe_repr(value: Any) -> str:
    return text(repr(value))


def hashed(value: str, prefix: str = "") -> str:
    """A stable, short stand-in for an identifier that must not be logged or stored as sent."""
    digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    return prefix + digest


def key(value: str, limit: int = 256) -> str:
    """``value`` as part of a state key: itself when short and encodable (readable in Redis),
    else its hash (a key must encode, and stay small whatever the client sent)."""
    if len(value) <= limit:
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
    return hashed(value, "#")


class BoundedLabel:
    """Label values chosen outside the gateway (a model name): the first ``limit`` distinct
    values seen keep their own series, later ones count as ``other``, so no client can grow
    ``/metrics`` without bound."""

    __slots__ = ("_seen", "limit")

    def __init__(self, limit: int = MAX_LABEL_VALUES) -> None:
        self.limit = limit
        self._seen: set[str] = set()

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            return "unknown"
        if value in self._seen:
            return value
        if len(value) > MAX_LABEL_CHARS or len(self._seen) >= self.limit:
            return OTHER
        safe = text(value)
        if safe != value:
            return OTHER
        self._seen.add(value)
        return value
