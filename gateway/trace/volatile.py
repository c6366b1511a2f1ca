"""Values that change on every call without meaning anything: in results and in arguments.

Result text is scrubbed by ``TraceSettings.volatile_patterns`` (normalize.py); this module adds
what a fixed pattern cannot say: a *random-looking* token (Codex's ``Chunk ID: 3f2a1b``, a nonce
in a URL, a temp file's suffix), and the arguments' volatile values (a fresh request id or
timestamp passed with every call), so two calls that differ only there compare equal.
"""

from __future__ import annotations

import re
from typing import Any

PLACEHOLDER = "<v>"  # what scrubbed volatile text becomes (normalize.py uses the same)

# Hex of 6-15 digits (longer hex is a built-in volatile pattern), with letters and digits mixed:
# "3f2a1b", "a91c0e7". Pure words ("decade") and pure numbers are not random-looking.
_HEX = r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,15}|(?=[0-9A-F]*\d)(?=[0-9A-F]*[A-F])[0-9A-F]{6,15}"
_CANDIDATE = re.compile(rf"\b(?:{_HEX}|(?=[0-9A-Za-z]*\d)(?=[0-9A-Za-z]*[A-Za-z])[0-9A-Za-z]{{8,40}})\b")
_HEX_ONLY = re.compile(_HEX)
_SWITCH = re.compile(r"\d[A-Za-z]|[A-Za-z]\d")
MIN_SWITCHES = 3  # "python3", "sha256", "ipv4addr" switch once or twice; "aZ3kP9qL" does not

# Whole argument values that look volatile: UUIDs, ISO timestamps, long hex, base64/base62 tokens.
_VOLATILE_VALUE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"
    r"|(0x)?[0-9a-fA-F]{16,}"
    r"|(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[a-z])(?=[A-Za-z0-9+/_-]*[A-Z])[A-Za-z0-9+/_-]{20,}={0,2}"
)
# The same shapes inside a longer value ("deploy at 2026-12-02T05:00:00Z", "run <uuid>").
_EMBEDDED = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"
)
# Keys whose value names what the call acts on (a path, a URL, a command, a record id): never
# scrubbed, whatever it looks like; another id is another record.
_TARGET_KEY = re.compile(
    r"path|file|dir|url|uri|href|command|cmd|code|script|sql|query|(^|_)id$|ids?$|"
    r"key$|hash|sha|ref|target|name|content|text|body",
    re.IGNORECASE,
)


def scrub_random(text: str) -> str:
    """``text`` with random-looking tokens replaced by the placeholder."""
    return _CANDIDATE.sub(_random_or_kept, text)


def _random_or_kept(match: re.Match[str]) -> str:
    token = match.group()
    if _HEX_ONLY.fullmatch(token) or len(_SWITCH.findall(token)) >= MIN_SWITCHES:
        return PLACEHOLDER
    return token


def scrub_args(value: Any, volatile_keys: frozenset[str], by_value: bool) -> Any:
    """Parsed arguments with fresh-per-call values replaced by the placeholder (at any depth)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            folded = k.lower()
            if folded in volatile_keys and not isinstance(v, (dict, list)):
                out[k] = PLACEHOLDER
            elif by_value and isinstance(v, str) and not _TARGET_KEY.search(k):
                out[k] = _scrub_value(v)
            else:
                out[k] = scrub_args(v, volatile_keys, by_value)
        return out
    if isinstance(value, list):
        return [scrub_args(v, volatile_keys, by_value) for v in value]
    return value


def _scrub_value(value: str) -> str:
    if _VOLATILE_VALUE.fullmatch(value):
        return PLACEHOLDER
    return _EMBEDDED.sub(PLACEHOLDER, value) if len(value) >= 16 else value
