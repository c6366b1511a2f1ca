"""telemetry.enabled in the config exports over OTLP/HTTP: a receiver on loopback records what
the gateway POSTs to /v1/traces, decoded with the OTLP protobuf schema."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from support.servers import serve

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[dict]]]:
    """(base URL, recorded POSTs): answers every POST with an empty 200 like a collector."""
    posts: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            posts.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", posts
    finally:
        server.shutdown()
        server.server_close()


def exported_spans(posts: list[dict]) -> list[tuple[str, Span]]:
    """(service.name, span) of every span in every export request."""
    found = []
    for post in posts:
        request = ExportTraceServiceRequest.FromString(post["body"])
        for resource_spans in request.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                found += [(attributes.get("service.name"), span) for span in scope_spans.spans]
    return found


def test_spans_reach_an_otlp_http_receiver(upstream):
    with otlp_receiver() as (receiver, posts):
        config = Config.model_validate(
            {
                "upstream": {"base_url": upstream.url + "/v1"},
                "telemetry": {
                    "enabled": True,
                    "endpoint": receiver + "/v1/traces",
                    "service_name": "lg-test",
                    "headers": {"x-collector-key": "k1"},
                },
            }
        )
        with serve(build_app(config), **SERVER_OPTIONS) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=10)
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        # Leaving the block stopped the app: its lifespan flushed the batch to the receiver.
    assert posts and {p["path"] for p in posts} == {"/v1/traces"}
    assert all(p["headers"]["content-type"] == "application/x-protobuf" for p in posts)
    assert all(p["headers"]["x-collector-key"] == "k1" for p in posts)
    spans = exported_spans(posts)
    assert {service for service, _ in spans} == {"lg-test"}
    by_kind = {span.kind: span for _, span in spans}
    server, call = by_kind[Span.SPAN_KIND_SERVER], by_kind[Span.SPAN_KIND_CLIENT]
    assert server.name == "POST /v1/chat/completions"
    assert call.trace_id == server.trace_id and call.parent_span_id == server.span_id
    attributes = {a.key: a.value for a in server.attributes}
    assert attributes["loopguard.action"].string_value == "pass"
    assert attributes["loopguard.protocol"].string_value == "openai.chat_completions"
    # and the upstream saw the upstream-call span as its parent
    assert upstream.last["headers"]["traceparent"].startswith(f"00-{call.trace_id.hex()}-{call.span_id.hex()}-")


def test_telemetry_config_defaults_off():
    telemetry = Config().telemetry
    assert telemetry.enabled is False and telemetry.endpoint == "http://127.0.0.1:4318/v1/traces"
