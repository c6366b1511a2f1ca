"""Tracing through a real gateway: the SDK's in-memory exporter sees the request span, the
upstream call as its child, and the real upstream receives that child's ``traceparent``."""

from __future__ import annotations

import hashlib

import httpx
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from support.looping import RespondingUpstream, stubborn
from support.policies import ladder_policy
from support.servers import serve
from support.upstream import Reply
from support.waiting import wait_for

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from gateway.telemetry import instrument
from gateway.telemetry.upstream import TracingUpstream

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"


def looping_history(times: int) -> list[dict]:
    """``times`` identical read_file calls, each answered the same."""
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for i in range(times):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "hello"})
    return messages


@pytest.fixture
def traced(tmp_path):
    """(gateway URL, upstream, exporter): a real gateway traced into an in-memory exporter."""
    upstream = RespondingUpstream(lambda request: Reply(content="done"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    with serve(upstream.app) as upstream_url:
        app = build_app(
            Config.model_validate({"upstream": {"base_url": upstream_url + "/v1"}}), policies=PolicyHolder(policy)
        )
        instrument(app, provider)
        with serve(app, **SERVER_OPTIONS) as url:
            yield url, upstream, exporter


def session_key(local: str, api_key: str = "sk-test") -> bytes:
    """The session's key in the state store: the client's id, namespaced by its credential."""
    return f"c:{hashlib.sha256(api_key.encode()).hexdigest()[:24]}:{local}".encode()


def client(url: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=10, default_headers=headers)


def spans_by_kind(exporter: InMemorySpanExporter, count: int = 2):
    """The request and upstream spans, once ``count`` have ended: the request span ends when the
    ASGI app returns, just after the client has read the last byte."""
    wait_for(lambda: len(exporter.get_finished_spans()) >= count)
    spans = exporter.get_finished_spans()
    server = [s for s in spans if s.kind == SpanKind.SERVER]
    upstream = [s for s in spans if s.kind == SpanKind.CLIENT]
    return server, upstream


def test_request_span_with_the_upstream_call_as_child_and_traceparent_sent(traced):
    url, upstream, exporter = traced
    reply = client(url, traceparent=TRACEPARENT, **{"x-loopguard-session": "run-42"}).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == "done"
    (server,), (call,) = spans_by_kind(exporter)
    # The gateway's span continues the client's trace; the upstream call is its child.
    assert server.context.trace_id == int(CLIENT_TRACE, 16) and server.parent.span_id == int(CLIENT_SPAN, 16)
    assert call.context.trace_id == server.context.trace_id and call.parent.span_id == server.context.span_id
    assert server.name == "POST /v1/chat/completions"
    attributes = dict(server.attributes)
    assert attributes["loopguard.protocol"] == "openai.chat_completions"
    assert attributes["loopguard.action"] == "pass" and "loopguard.detector" not in attributes
    assert attributes["http.response.status_code"] == 200
    assert attributes["loopguard.session_hash"] == hashlib.sha256(session_key("h:run-42")).hexdigest()[:16]
    assert attributes["loopguard.upstream.calls"] == 1
    assert attributes["loopguard.upstream.duration_ms"] > 0
    assert call.attributes["http.response.status_code"] == 200 and call.attributes["url.path"] == "/chat/completions"
    # The upstream got the gateway's context (parent: the upstream-call span), not the client's.
    sent = upstream.last["headers"]["traceparent"]
    assert sent == f"00-{CLIENT_TRACE}-{call.context.span_id:016x}-01"
    assert "run-42" not in str(attributes)  # the session id itself never leaves the gateway


def test_a_warned_request_carries_action_detector_and_the_intervention(traced):
    url, _, exporter = traced
    client(url, **{"x-loopguard-session": "run-7"}).chat.completions.create(model="m", messages=looping_history(3))
    (server,), (_call,) = spans_by_kind(exporter)
    assert server.attributes["loopguard.action"] == "warn"
    assert server.attributes["loopguard.detector"] == "no_progress"
    (event,) = [e for e in server.events if e.name == "loop_intervention"]
    assert event.attributes["loopguard.detector"] == "no_progress" and event.attributes["loopguard.action"] == "warn"
    assert event.attributes["loopguard.count"] == 3 and event.attributes["loopguard.phase"] == "request"
    assert server.attributes["loopguard.session_hash"] == hashlib.sha256(session_key("h:run-7")).hexdigest()[:16]


def test_a_terminated_request_has_one_upstream_span_its_final_answer(traced):
    url, upstream, exporter = traced
    reply = client(url).chat.completions.create(model="m", messages=looping_history(5))
    assert reply.choices[0].finish_reason == "stop"
    # Terminate mode answer: the request itself is not forwarded; the one upstream call asks the
    # model for its final answer, and is traced like any other.
    (server,), (call,) = spans_by_kind(exporter)
    assert len(upstream.requests) == 1 and call.parent.span_id == server.context.span_id
    assert server.attributes["loopguard.action"] == "terminate"
    # Without a session header the hash comes from the guard's own audit event (a fingerprint).
    assert len(server.attributes["loopguard.session_hash"]) == 16


def test_a_stream_span_ends_after_the_stream(traced):
    url, _, exporter = traced
    chunks = list(
        client(url).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "done"
    (server,), (call,) = spans_by_kind(exporter)
    assert call.parent.span_id == server.context.span_id
    assert server.start_time <= call.start_time and call.end_time <= server.end_time


def test_reasks_are_child_spans_too(tmp_path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    upstream = RespondingUpstream(stubborn())
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    with serve(upstream.app) as upstream_url:
        app = build_app(
            Config.model_validate({"upstream": {"base_url": upstream_url + "/v1"}}), policies=PolicyHolder(policy)
        )
        instrument(app, provider)
        with serve(app, **SERVER_OPTIONS) as url:
            client(url).chat.completions.create(model="m", messages=looping_history(3))
    (server,), calls = spans_by_kind(exporter, count=len(upstream.requests) + 1)
    assert len(calls) == len(upstream.requests) > 1  # the first answer was vetoed and re-asked
    assert {c.parent.span_id for c in calls} == {server.context.span_id}
    assert server.attributes["loopguard.upstream.calls"] == len(calls)


def test_health_and_metrics_are_not_traced(traced):
    url, _, exporter = traced
    for path in ("/healthz", "/readyz", "/metrics"):
        assert httpx.get(url + path).status_code == 200
    assert exporter.get_finished_spans() == ()


def test_relayed_routes_are_traced_as_passthrough(traced):
    url, _, exporter = traced
    httpx.get(url + "/v1/models", headers={"authorization": "Bearer sk-test"})
    (server,), (call,) = spans_by_kind(exporter)
    assert server.attributes["loopguard.protocol"] == "passthrough" and server.name == "GET /v1/*"
    assert call.parent.span_id == server.context.span_id


def test_off_by_default_and_the_clients_traceparent_is_relayed_untouched(upstream):
    app = build_app(Config.model_validate({"upstream": {"base_url": upstream.url + "/v1"}}))
    assert not isinstance(app.state.gateway.upstream, TracingUpstream)
    with serve(app, **SERVER_OPTIONS) as url:
        client(url, traceparent=TRACEPARENT).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert upstream.last["headers"]["traceparent"] == TRACEPARENT


def test_an_unreachable_upstream_is_an_error_span_under_a_502(tmp_path):
    from opentelemetry.trace import StatusCode
    from support.ports import refused_port

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with refused_port() as port:
        app = build_app(Config.model_validate({"upstream": {"base_url": f"http://127.0.0.1:{port}/v1"}}))
        instrument(app, provider)
        with serve(app, **SERVER_OPTIONS) as url:
            with pytest.raises(openai.APIStatusError) as caught:
                client(url).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502
    (server,), (call,) = spans_by_kind(exporter)
    assert server.attributes["http.response.status_code"] == 502 and server.status.status_code == StatusCode.ERROR
    assert call.status.status_code == StatusCode.ERROR and call.parent.span_id == server.context.span_id
    assert any(e.name == "exception" for e in call.events)
