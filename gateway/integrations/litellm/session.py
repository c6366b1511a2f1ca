"""What LoopGuard reads from a LiteLLM request: the client's body and headers, the session.

A session is LiteLLM's own session id when the client sends one (``litellm_session_id``, or
``metadata.session_id``), else LoopGuard's sources as configured (session headers, the body's
``user``), else a fingerprint of how the conversation starts. It is namespaced by the hash of the
LiteLLM key that made the call, so two keys never share a session. ``litellm_call_id`` names one
request, not a session: it links the pre-call judgement to the post-call hooks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from gateway import untrusted
from gateway.config import SessionsConfig
from gateway.state.session import fingerprint
from gateway.trace.model import Conversation

SESSION_HEADER = "x-loopguard-session"
# plan_request reads the session from this header alone: this module has chosen it already.
RESOLVED = SessionsConfig(headers=(SESSION_HEADER,), body_user=False, metadata_key=None)
# Proxy-side fields of LiteLLM's request dict: never part of a re-ask to the model.
_INTERNAL = frozenset(
    {
        "metadata",
        "litellm_metadata",
        "proxy_server_request",
        "secret_fields",
        "litellm_call_id",
        "litellm_logging_obj",
        "litellm_session_id",
        "stream",
        "stream_options",
        "messages",
        "mock_response",
        "guardrails",
        "user_api_key_dict",
    }
)


def client_body(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the model will get it: LiteLLM's dict without its own bookkeeping."""
    return {k: v for k, v in data.items() if k not in _INTERNAL and not k.startswith(("litellm_", "_litellm"))}


def client_headers(data: Mapping[str, Any]) -> dict[str, str]:
    server = data.get("proxy_server_request")
    headers = server.get("headers") if isinstance(server, dict) else None
    if not isinstance(headers, dict):
        return {}
    return {str(k).lower(): str(v) for k, v in headers.items() if str(k).lower() != "authorization"}


def session_of(data: Mapping[str, Any], key: str | None, sources: SessionsConfig, conversation: Conversation) -> str:
    """``conversation``: the request's, as its protocol's adapter reads it (its fingerprint is
    the session when nothing names one)."""
    explicit = _litellm_session(data) or _configured(data, sources)
    if explicit is None:
        explicit = "f:" + fingerprint(conversation)
    return f"k:{_digest(key)}/{explicit}"[:300]


def _digest(key: str | None) -> str:
    """LiteLLM hands hooks a hash of the key already; hashed again, no form of it is ever kept."""
    return hashlib.sha256(key.encode()).hexdigest()[:16] if key else "none"


def _litellm_session(data: Mapping[str, Any]) -> str | None:
    for value in (data.get("litellm_session_id"), _meta(data, "metadata"), _meta(data, "litellm_metadata")):
        if isinstance(value, str) and value:
            return untrusted.hashed(value, "l:")
    return None


def _configured(data: Mapping[str, Any], sources: SessionsConfig) -> str | None:
    headers = client_headers(data)
    for name in sources.headers:
        if value := headers.get(name):
            return "h:" + value[:200]
    user = data.get("user")
    if sources.body_user and isinstance(user, str) and user:
        return untrusted.hashed(user, "u:")
    return None


def _meta(data: Mapping[str, Any], key: str) -> Any:
    metadata = data.get(key)
    return metadata.get("session_id") if isinstance(metadata, dict) else None
