"""Session identity from configurable sources, and the state/sessions config blocks."""

import pytest

from gateway.config import ConfigError, SessionsConfig, load_config
from gateway.protocols.anthropic.protocol import KIND as ANTHROPIC_KIND
from gateway.protocols.chat.parse import conversation_from_body
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.protocols.responses.protocol import KIND as RESPONSES_KIND
from gateway.state.session import DEFAULT_SOURCES, is_fingerprint, session_id
from gateway.untrusted import hashed

RESPONSES = RESPONSES_KIND.build()

ANTHROPIC = ANTHROPIC_KIND.build()

BODY = {
    "model": "m",
    "user": "alice",
    "metadata": {"session_id": "meta-1", "run": "run-9"},
    "messages": [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "task"}],
}


def sid(headers, body=BODY, sources=None):
    conv = conversation_from_body(body)
    return session_id(headers, body, conv, sources or DEFAULT_SOURCES, CHAT.requests.user(body))


def test_default_order_header_then_user_then_metadata_then_fingerprint():
    assert sid({"x-loopguard-session": "abc", "x-session-id": "other"}) == "h:abc"
    assert sid({"x-session-id": "other"}) == "h:other"
    assert sid({}) == hashed("alice", "u:")
    assert sid({}, {**BODY, "user": ""}) == hashed("meta-1", "m:")
    fingerprint = sid({}, {**BODY, "user": None, "metadata": None})
    assert fingerprint.startswith("f:")
    # The fingerprint is stable across the conversation's requests (the history grows).
    longer = {
        **BODY,
        "user": None,
        "metadata": None,
        "messages": [*BODY["messages"], {"role": "assistant", "content": "ok"}],
    }
    assert sid({}, longer) == fingerprint


def test_configured_sources_replace_the_defaults():
    sources = SessionsConfig(headers=["X-Agent-Run"], body_user=False, metadata_key="run")
    assert sources.headers == ("x-agent-run",)  # header names are case-insensitive
    assert sid({"x-agent-run": "r1", "x-loopguard-session": "ignored"}, sources=sources) == "h:r1"
    assert sid({"x-loopguard-session": "ignored"}, sources=sources) == hashed("run-9", "m:")
    no_meta = SessionsConfig(headers=[], body_user=False, metadata_key=None)
    assert sid({"x-loopguard-session": "x"}, sources=no_meta).startswith("f:")


def test_long_identifiers_are_bounded():
    assert sid({"x-loopguard-session": "x" * 1000}) == "h:" + "x" * 200


def test_state_and_sessions_config(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "state:\n  backend: redis\n  url: ${REDIS_URL}\n  op_timeout_s: 0.05\n"
        "sessions:\n  headers: [x-my-session]\n  body_user: false\n"
    )
    config = load_config(path, env={"REDIS_URL": "redis://:pw@redis:6379/0"})
    assert config.state.backend == "redis" and config.state.url == "redis://:pw@redis:6379/0"
    assert config.state.op_timeout_s == 0.05 and config.state.key_prefix == "loopguard:"
    assert config.sessions.headers == ("x-my-session",) and config.sessions.body_user is False
    assert load_config(None).state.backend == "memory"


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("state: {backend: etcd}\n", "state.backend", "'memory' or 'redis'"),
        ("state: {url: 'http://redis:6379'}\n", "state.url", "redis://"),
        ("state: {op_timeout_s: 0}\n", "state.op_timeout_s", "greater than 0"),
        ("state: {max_sessions: 0}\n", "state.max_sessions", "greater than or equal to 1"),
        ("state: {pool: 3}\n", "state.pool", "Extra inputs"),
        ("sessions: {headers: x-one}\n", "sessions.headers", "tuple"),
        ("sessions: {cookie: sid}\n", "sessions.cookie", "Extra inputs"),
    ],
)
def test_invalid_state_config_names_the_key(tmp_path, text, where, reason):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    assert err.value.path == where and reason in err.value.reason


def test_fingerprinted_sessions_are_told_apart_from_named_ones():
    conv = conversation_from_body(
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]}
    )
    assert is_fingerprint(session_id({}, {"messages": []}, conv))
    assert not is_fingerprint(session_id({"x-loopguard-session": "run-1"}, {"messages": []}, conv))
    assert not is_fingerprint(session_id({}, {"messages": []}, conv, DEFAULT_SOURCES, "alice"))


CLAUDE_CODE_USER = "user_5e1f_account_9c2d_session_0b7a"  # what Claude Code sends as metadata.user_id


@pytest.mark.parametrize(
    ("adapter", "body", "user"),
    [
        (CHAT, {"user": "alice"}, "alice"),
        (RESPONSES, {"user": "alice"}, "alice"),
        (ANTHROPIC, {"metadata": {"user_id": CLAUDE_CODE_USER}}, CLAUDE_CODE_USER),
        (ANTHROPIC, {"user": "alice"}, None),  # not a Messages API field
        (CHAT, {"metadata": {"user_id": "alice"}}, None),  # chat reads metadata only by metadata_key
        (ANTHROPIC, {"metadata": {"user_id": ""}}, None),
        (ANTHROPIC, {"metadata": {"user_id": 42}}, None),
        (ANTHROPIC, {"metadata": "alice"}, None),
        (CHAT, {"user": ["alice"]}, None),
    ],
)
def test_each_protocol_names_its_end_user_its_own_way(adapter, body, user):
    assert adapter.requests.user(body) == user


ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 10,
    "metadata": {"user_id": CLAUDE_CODE_USER},
    "system": "You are an agent.",
    "messages": [{"role": "user", "content": "task"}],
}


@pytest.mark.parametrize(
    ("headers", "sources", "expected"),
    [
        ({}, DEFAULT_SOURCES, hashed(CLAUDE_CODE_USER, "u:")),
        ({"x-loopguard-session": "run-1"}, DEFAULT_SOURCES, "h:run-1"),  # a header still comes first
        ({}, SessionsConfig(body_user=False), "f:"),  # the same switch as OpenAI's `user`
    ],
)
def test_anthropic_metadata_user_id_is_a_session_source_like_user(headers, sources, expected):
    conv = ANTHROPIC.requests.conversation(ANTHROPIC_BODY, ANTHROPIC.requests.items(ANTHROPIC_BODY))
    found = session_id(headers, ANTHROPIC_BODY, conv, sources, ANTHROPIC.requests.user(ANTHROPIC_BODY))
    assert found == expected if expected != "f:" else found.startswith("f:")
