"""JSON in and out of every wire format: orjson, with a stdlib fallback for valid JSON it refuses.

orjson refuses some JSON that clients and models really send: lone surrogate escapes
(``"\\ud83d"``, half an emoji cut by a truncating agent), numbers beyond a double (``1e400``),
nesting deeper than its serializer allows. Refusing such a body would switch the guard off for
that conversation, so ``loads`` falls back to the stdlib parser and ``dumps`` to the stdlib
serializer (ASCII-escaped, so lone surrogates go out as the same ``\\uXXXX`` escapes they came
in as). A number beyond a double (and the ``NaN``/``Infinity`` some clients write) is kept as
its own text: parsed into a placeholder string, written back verbatim. Only bodies orjson
refuses pay for the fallback.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from typing import Any

import orjson

__all__ = ["DecodeError", "dumps", "loads"]

DecodeError = (ValueError, RecursionError)  # what a body no parser can read raises

# A per-process nonce makes the placeholder impossible to forge from a request body.
_NONCE = secrets.token_hex(8)
_PREFIX = f"\x00loopguard-number-{_NONCE}:"
_MARK = _NONCE.encode()
_PLACED = re.compile(rb'"\\u0000loopguard-number-' + _NONCE.encode() + rb':([-+.0-9A-Za-z]+)\\u0000"')


def loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data, parse_float=_float, parse_constant=_constant)


def dumps(value: Any) -> bytes:
    try:
        out = orjson.dumps(value)
    except (TypeError, RecursionError):  # orjson.JSONEncodeError is a TypeError
        out = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")
    return _PLACED.sub(rb"\1", out) if _MARK in out else out


def _float(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else f"{_PREFIX}{text}\x00"


def _constant(name: str) -> str:
    return f"{_PREFIX}{name}\x00"  # NaN, Infinity: not JSON, but forwarded as they came
