"""Every guarded request's span carries the session hash, whatever the session's source: a
header, the body's ``user`` or ``metadata``, or a fingerprint of the conversation's start. It is
the hash of the session the guard judged the request in, so a passing request and a later
warned one of the same conversation (whose hash also comes from its audit event) agree."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from support import loop_bodies
from support.protocols import all_protocols
from support.waiting import wait_for

from gateway.audit.memory_sink import MemorySink
from gateway.telemetry import instrument
from gateway.telemetry.sink import session_hash
from gateway.untrusted import hashed

NAMESPACE = f"c:{hashlib.sha256(b'sk-test').hexdigest()[:24]}:"  # the client's credential, hashed
CHAT_TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
CLAUDE_TOOLS = [{"name": "read_file", "input_schema": {"type": "object"}}]


@pytest.fixture
def traced(tmp_path):
    """(protocols, exporter, audit events): all three protocols, traced in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with all_protocols(tmp_path, prepare=lambda app: instrument(app, provider)) as gateway:
        events = MemorySink()
        gateway.app.state.gateway.audit.add(events)
        yield gateway, exporter, events


def server_spans(exporter: InMemorySpanExporter, count: int) -> list:
    """The request spans, oldest first, once ``count`` of them have ended."""

    def ended() -> list:
        return [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]

    wait_for(lambda: len(ended()) >= count)
    return ended()


def chat_loop(times: int) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for i in range(times):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "hello"})
    return messages


def claude_loop(times: int) -> list[dict]:
    return loop_bodies.claude_request(times, result="hello")["messages"]


def test_a_passing_chat_request_named_by_the_bodys_user(traced):
    gateway, exporter, events = traced
    reply = gateway.openai().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], user="alice"
    )
    assert reply.choices[0].message.content == "done"
    (span,) = server_spans(exporter, 1)
    assert span.attributes["loopguard.action"] == "pass" and not events.events
    assert span.attributes["loopguard.session_hash"] == session_hash(NAMESPACE + hashed("alice", "u:"))
    assert "alice" not in str(dict(span.attributes))


def test_a_passing_responses_request_named_by_its_metadata(traced):
    gateway, exporter, _ = traced
    gateway.openai().responses.create(model="m", input="hi", metadata={"session_id": "task-9"})
    (span,) = server_spans(exporter, 1)
    assert span.attributes["loopguard.action"] == "pass"
    # Each protocol's conversations are sessions of their own (the guard's key says so).
    assert span.attributes["loopguard.session_hash"] == session_hash("responses:" + NAMESPACE + hashed("task-9", "m:"))


def test_fingerprinted_chat_requests_agree_with_the_audit_trail(traced):
    gateway, exporter, events = traced
    client = gateway.openai()
    client.chat.completions.create(model="m", messages=chat_loop(1), tools=CHAT_TOOLS)  # passes
    client.chat.completions.create(model="m", messages=chat_loop(3), tools=CHAT_TOOLS)  # warned
    passed, warned = server_spans(exporter, 2)
    (event,) = events.events
    assert event.action == "warn" and ":f:" in event.session  # a fingerprint: no header, no user
    assert passed.attributes["loopguard.action"] == "pass" and warned.attributes["loopguard.action"] == "warn"
    assert (
        passed.attributes["loopguard.session_hash"]
        == warned.attributes["loopguard.session_hash"]
        == session_hash(event.session)
    )


@pytest.mark.parametrize("stream", [False, True])
def test_fingerprinted_messages_requests_carry_their_sessions_hash(traced, stream):
    gateway, exporter, events = traced
    client = gateway.anthropic()
    for times in (1, 3):  # a pass, then a warn, of one conversation
        kwargs = dict(model="m", max_tokens=5, messages=claude_loop(times), tools=CLAUDE_TOOLS)
        if stream:
            with client.messages.stream(**kwargs) as said:
                said.get_final_message()
        else:
            client.messages.create(**kwargs)
    passed, warned = server_spans(exporter, 2)
    (event,) = events.events
    assert event.session.startswith("anthropic:" + NAMESPACE + "f:")
    assert passed.attributes["loopguard.action"] == "pass"
    assert (
        passed.attributes["loopguard.session_hash"]
        == warned.attributes["loopguard.session_hash"]
        == session_hash(event.session)
    )


def test_relayed_requests_carry_no_session_of_an_earlier_request(traced):
    gateway, exporter, _ = traced
    gateway.openai().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], user="bob")
    httpx.get(gateway.url + "/v1/models", headers={"authorization": "Bearer sk-test"})  # relayed (404 here)
    guarded, relayed = server_spans(exporter, 2)
    assert "loopguard.session_hash" in guarded.attributes
    assert "loopguard.session_hash" not in relayed.attributes  # no header: nothing names a session
