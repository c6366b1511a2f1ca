"""Excerpts the console may keep: capped, whitespace-flattened, with anything shaped like a secret
masked.

Tool arguments and results are the agent's data: a shell tool's output may hold an environment
dump, a config file its passwords. The console keeps a short excerpt of each, and only after
masking what looks like a credential: provider keys by their well-known prefixes, bearer and
basic tokens, JWTs, private-key blocks, URL passwords, and the value of any ``key = value`` or
``"key": "value"`` pair whose key names a secret. The patterns are compiled once, at import.
"""

from __future__ import annotations

import functools
import re

MASK = "\u2022\u2022\u2022"  # what a masked value reads as

_TOKENS = re.compile(
    "|".join(
        [
            r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{12,}",  # OpenAI, Anthropic
            r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
            r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
            r"\bAIza[0-9A-Za-z_\-]{30,}",  # Google
            r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
        ]
    ),
    re.DOTALL,
)
_SCHEMES = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]*:)[^@\s/]+@")
# From a word's start (\b): tried inside every long word, the leading run would backtrack
# quadratically in the word's length.
_SECRET_KEYS = (
    r"\b[A-Za-z0-9_\-]*(?:passw(?:or)?d|passwd|secret|token(?!s)|api[_\-]?key|access[_\-]?key|"
    r"private[_\-]?key|credential|authorization|cookie)[A-Za-z0-9_\-]*"
)
_PAIR = re.compile(r"""(["']?""" + _SECRET_KEYS + r"""["']?\s*[:=]\s*)(["']?)([^\s"',;}&]+)""", re.IGNORECASE)


# Each pattern runs only on text holding one of its words: most tool output holds none, and a
# regex scan per excerpt would cost more than the whole request it describes.
_TOKEN_HINTS = ("sk-", "AKIA", "gh", "xox", "AIza", "eyJ", "PRIVATE KEY")
_SCHEME_HINTS = ("bearer", "basic", "token")
_PAIR_HINTS = ("pass", "secret", "token", "key", "credential", "authorization", "cookie")


def mask(text: str) -> str:
    if any(hint in text for hint in _TOKEN_HINTS):
        text = _TOKENS.sub(MASK, text)
    lower = text.lower()
    if any(hint in lower for hint in _SCHEME_HINTS):
        text = _SCHEMES.sub(lambda m: f"{m.group(1)} {MASK}", text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    if any(hint in lower for hint in _PAIR_HINTS):
        text = _PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return text


def excerpt(text: str | None, limit: int) -> str | None:
    """At most ``limit`` characters of ``text`` flattened to one line, masked. Masking runs on a
    little more than is kept, so a secret cut at the edge is still recognised."""
    if text is None:
        return None
    return _excerpt(text[: limit * 2 + 256], limit)


@functools.lru_cache(maxsize=4096)
def _excerpt(head: str, limit: int) -> str:
    """Cached by the head only (a few hundred characters, so the cache stays small whatever the
    tools return): every intervention of a run shows the same earlier calls and results again."""
    flat = " ".join(head.split())
    masked = mask(flat)
    return masked if len(masked) <= limit else masked[: limit - 1] + "\u2026"
