"""Anthropic Messages traffic is traced like chat: its own upstream's calls are child spans."""

from __future__ import annotations

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from support.anthropic_upstream import AnthropicUpstream, healthy
from support.policies import ladder_policy
from support.servers import serve
from support.waiting import wait_for

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from gateway.telemetry import instrument


def test_the_anthropic_upstream_call_is_a_child_span(tmp_path):
    upstream = AnthropicUpstream(healthy(files=0))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    with serve(upstream.app) as upstream_url:
        app = build_app(
            Config.model_validate({"upstream": {"anthropic_base_url": upstream_url}}), policies=PolicyHolder(policy)
        )
        instrument(app, provider)
        with serve(app, **SERVER_OPTIONS) as url:
            body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
            assert httpx.post(url + "/v1/messages", json=body, headers={"x-api-key": "k"}).status_code == 200
            wait_for(lambda: len(exporter.get_finished_spans()) >= 2)
    spans = exporter.get_finished_spans()
    (server,) = [s for s in spans if s.kind == SpanKind.SERVER]
    (call,) = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert dict(server.attributes)["loopguard.protocol"] == "anthropic.messages"
    assert call.parent.span_id == server.context.span_id
    assert upstream.last["headers"]["traceparent"].split("-")[2] == f"{call.context.span_id:016x}"
