"""Which session a request belongs to, from what the client sends (no code change needed)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from gateway.trace.model import Conversation

SESSION_HEADERS = ("x-loopguard-session", "x-session-id")


def session_id(headers: Mapping[str, str], payload: dict[str, Any], conv: Conversation) -> str:
    """Explicit identifiers first (header, body ``user``, ``metadata.session_id``); else a
    fingerprint of how the conversation starts, which is stable across its requests."""
    for name in SESSION_HEADERS:
        if value := headers.get(name):
            return "h:" + value[:200]
    user = payload.get("user")
    if isinstance(user, str) and user:
        return "u:" + user[:200]
    metadata = payload.get("metadata")
    if isinstance(metadata, dict) and isinstance(sid := metadata.get("session_id"), str) and sid:
        return "m:" + sid[:200]
    return "f:" + fingerprint(conv)


def fingerprint(conv: Conversation) -> str:
    digest = hashlib.blake2b(digest_size=12)
    firsts = {}
    for turn in conv.turns:
        if turn.role in ("system", "user") and turn.role not in firsts:
            firsts[turn.role] = turn.text
    for role in ("system", "user"):
        digest.update(role.encode() + b"\x00" + firsts.get(role, "").encode("utf-8", "replace") + b"\x00")
    for name in sorted(conv.tools or ()):
        digest.update(name.encode("utf-8", "replace") + b"\x01")
    return digest.hexdigest()
