"""Which LoopGuard session a LiteLLM request belongs to."""

from __future__ import annotations

import hashlib

from gateway.config import SessionsConfig
from gateway.integrations.litellm.session import client_body, client_headers, session_of
from gateway.protocols.chat.parse import conversation_from_body
from gateway.untrusted import hashed

SOURCES = SessionsConfig()
KEY = "k:" + hashlib.sha256(b"key").hexdigest()[:16]
MESSAGES = [{"role": "system", "content": "You are a coder."}, {"role": "user", "content": "fix the bug"}]


CONV = conversation_from_body({"messages": MESSAGES})


def request(**extra) -> dict:
    return {"model": "m", "messages": MESSAGES, "litellm_call_id": "call-1", **extra}


def test_litellm_session_id_first_then_configured_sources_then_fingerprint():
    assert session_of(request(litellm_session_id="s1", user="u"), "key", SOURCES, CONV) == KEY + "/" + hashed(
        "s1", "l:"
    )
    assert session_of(request(metadata={"session_id": "s2"}), "key", SOURCES, CONV) == KEY + "/" + hashed("s2", "l:")
    headers = {"proxy_server_request": {"headers": {"X-LoopGuard-Session": "run-7"}}}
    assert session_of(request(user="u", **headers), "key", SOURCES, CONV) == KEY + "/h:run-7"
    assert session_of(request(user="u"), "key", SOURCES, CONV) == KEY + "/" + hashed("u", "u:")
    fingerprinted = session_of(request(), "key", SOURCES, CONV)
    assert fingerprinted.startswith(KEY + "/f:")
    # the same conversation start is the same session, whatever the request id
    assert session_of(request(litellm_call_id="call-2"), "key", SOURCES, CONV) == fingerprinted


def test_two_keys_never_share_a_session():
    assert session_of(request(user="u"), "key-a", SOURCES, CONV) != session_of(
        request(user="u"), "key-b", SOURCES, CONV
    )


def test_the_client_body_leaves_litellms_bookkeeping_out():
    data = request(
        stream=True,
        tools=[{"type": "function"}],
        metadata={"session_id": "s"},
        proxy_server_request={"headers": {"Authorization": "Bearer sk-x", "X-Session-Id": "7"}},
        litellm_logging_obj=object(),
        _litellm_strip_stream_usage=True,
        secret_fields={},
    )
    assert client_body(data) == {"model": "m", "tools": [{"type": "function"}]}
    assert client_headers(data) == {"x-session-id": "7"}  # never the credential


def test_the_guard_knows_a_fingerprinted_litellm_session_for_one():
    """A new run of the same task must start afresh (no compaction, no inherited vetoes) in
    the proxy as in the gateway: the guard must see that the session is only a fingerprint."""
    from gateway.integrations.litellm.session import RESOLVED, SESSION_HEADER
    from gateway.state.session import is_fingerprint, session_id

    conv = CONV
    for data, fingerprinted in (
        (request(), True),
        (request(user="u"), False),
        (request(litellm_session_id="s"), False),
    ):
        headers = {SESSION_HEADER: session_of(data, "key", SOURCES, CONV)}
        assert is_fingerprint(session_id(headers, {}, conv, RESOLVED)) is fingerprinted
