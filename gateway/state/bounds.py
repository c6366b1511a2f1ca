"""What a stored record may keep of client and upstream text: bounded in bytes, not only in count.

A vetoed exchange keeps the refused call to show it again, and a response chain the items the
upstream holds. Kept whole, one session with a 50 KB argument cost 50 KB, and 6,000 of them
over a gigabyte before the session bound evicted anything. Each string longer than a record's
limit is kept as its head and a digest of the whole: the model still sees which call was
refused, and the detectors still tell two different long values apart (different digests) and
find a repeated one (the same digest). A string holding a JSON object or array (tool arguments)
is bounded inside, so it stays valid JSON when that is enough.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gateway.wire import codec

VETO_TEXT_CHARS = 2048  # per string in a vetoed exchange: arguments, the observation
CHAIN_TEXT_CHARS = 16 * 1024  # per string in a chain record: conversation items are read by detectors


def bounded(value: Any, limit: int) -> Any:
    """``value`` (JSON-like) with every string longer than ``limit`` characters shortened."""
    if isinstance(value, str):
        return value if len(value) <= limit else _shorten(value, limit)
    if isinstance(value, dict):
        return {k: bounded(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [bounded(v, limit) for v in value]
    return value


def _shorten(text: str, limit: int) -> str:
    if text[:1] in ("{", "["):
        inner = _bounded_json(text, limit)
        if inner is not None:
            return inner
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    return f"{text[:limit]}...[{len(text) - limit} more characters, blake2b {digest}]"


def _bounded_json(text: str, limit: int) -> str | None:
    """JSON text bounded inside, when that brings it within 4x the limit; else None."""
    try:
        parsed = codec.loads(text)
    except codec.DecodeError:
        return None
    if not isinstance(parsed, (dict, list)):
        return None
    out = codec.dumps(bounded(parsed, limit // 2)).decode()
    return out if len(out) <= 4 * limit else None
