"""Which session a request belongs to, from what the client sends (no code change needed)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from gateway import untrusted
from gateway.config import SessionsConfig
from gateway.trace.model import Conversation

DEFAULT_SOURCES = SessionsConfig()
SESSION_HEADERS = DEFAULT_SOURCES.headers


# Set by the gateway's client authentication for every request: the SHA-256 of the credential
# the client sent (a client-sent value is dropped first, so it cannot be forged). A caller that
# runs before it (a tracing middleware, the LiteLLM guardrail) sets it from the same reading
# (``KeyPlaces.credential_hash``): this module reads no credential itself.
CLIENT_HEADER = "x-loopguard-client"


def session_id(
    headers: Mapping[str, str],
    payload: dict[str, Any],
    conv: Conversation,
    sources: SessionsConfig = DEFAULT_SOURCES,
    user: str | None = None,
    memo: dict[str, Any] | None = None,
) -> str:
    """The session's key in the state store: the client's own id, namespaced by its credential.
    ``user``: the end user the body names, read by the protocol's adapter (``Requests.user``).
    ``memo``: the history cache's memo of this conversation (``guard/history.py``), where its
    fingerprint is kept once known.

    Two tenants choosing the same session id (or ``user``, or starting their conversations
    alike) must never share state, or one could push the other's run into termination.
    """
    return client_namespace(headers) + _local_id(headers, payload, conv, sources, user, memo)


# Set by the client authentication for a key configured with a tenant (never client-sent).
TENANT_HEADER = "x-loopguard-tenant"


def client_namespace(headers: Mapping[str, str]) -> str:
    """``c:<credential hash>:``, the prefix of everything the gateway keeps for one client (its
    sessions, its response chains, threads and conversations); "" for a request without a
    credential. Keys of one tenant share ``t:<tenant hash>:``: an agent may rotate between them."""
    tenant = headers.get(TENANT_HEADER)
    if tenant:
        return "t:" + hashlib.sha256(tenant.encode("utf-8", "replace")).hexdigest()[:24] + ":"
    client = headers.get(CLIENT_HEADER)
    return f"c:{client[:24]}:" if client else ""


def _local_id(
    headers: Mapping[str, str],
    payload: dict[str, Any],
    conv: Conversation,
    sources: SessionsConfig,
    user: str | None,
    memo: dict[str, Any] | None,
) -> str:
    """Explicit identifiers first, in the configured order (headers, the body's end user,
    ``metadata.<key>``); else a fingerprint of how the conversation starts, which is stable
    across its requests. The prefix keeps an id from one source from meeting another's.

    Ids read from the body are hashed: they are whatever the client put there (Claude Code's
    ``metadata.user_id`` is JSON naming its device and account), and the session id is logged,
    audited and used as a state key."""
    for name in sources.headers:
        if value := headers.get(name):
            return "h:" + value[:200]
    if sources.body_user and user:
        return untrusted.hashed(user, "u:")
    metadata = payload.get("metadata")
    if sources.metadata_key and isinstance(metadata, dict):
        sid = metadata.get(sources.metadata_key)
        if isinstance(sid, str) and sid:
            return untrusted.hashed(sid, "m:")
    return "f:" + fingerprint(conv, memo)


def is_fingerprint(session: str) -> bool:
    """The session was derived from how the conversation starts, not named by the client: two
    runs of the same task share it, so nothing may treat one as the continuation of the other.
    LiteLLM's guardrail names its fingerprint sessions ``k:<key hash>/f:...``."""
    return session.startswith("f:") or ":f:" in session or "/f:" in session


_FINGERPRINT = "fingerprint"  # its key in a history memo


def fingerprint(conv: Conversation, memo: dict[str, Any] | None = None) -> str:
    """How the conversation opens: its first system and user texts and its declared tools. A
    history memo holds it once both texts were found: a conversation that only grew since
    (what the memo vouches for) opens the same way."""
    if memo is not None and isinstance(known := memo.get(_FINGERPRINT), str):
        return known
    digest = hashlib.blake2b(digest_size=12)
    firsts: dict[str, str] = {}
    for turn in conv.turns:  # the opening: stop once both are found, not at the end of the run
        if turn.role in ("system", "user") and turn.role not in firsts:
            firsts[turn.role] = turn.text
            if len(firsts) == 2:
                break
    for role in ("system", "user"):
        digest.update(role.encode() + b"\x00" + firsts.get(role, "").encode("utf-8", "replace") + b"\x00")
    for name in sorted(conv.tools or ()):
        digest.update(name.encode("utf-8", "replace") + b"\x01")
    found = digest.hexdigest()
    if memo is not None and len(firsts) == 2:
        memo[_FINGERPRINT] = found
    return found
