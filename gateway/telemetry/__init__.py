"""OpenTelemetry tracing, off by default; its packages are imported only once it is enabled.

One SERVER span per guarded or relayed request (protocol, session hash, action, detector,
upstream time), each upstream call as a CLIENT child span, and W3C ``traceparent`` sent to the
upstream so the provider's trace joins the gateway's. Built around the request pipeline, not
inside it: an ASGI middleware, an Upstream wrapper and an audit sink. Each app has its own
tracer provider, as it has its own metrics registry.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from gateway.config import TelemetryConfig


def provider_for(config: TelemetryConfig) -> TracerProvider:
    """A provider exporting to ``config.endpoint`` in batches, off the request path."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": config.service_name}))
    exporter = OTLPSpanExporter(endpoint=config.endpoint, headers=dict(config.headers) or None)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def instrument(app: Any, provider: TracerProvider) -> None:
    """Trace ``app`` (built by ``build_app``) into ``provider``, flushed when the app stops."""
    from gateway.telemetry.middleware import TracingMiddleware
    from gateway.telemetry.sink import SpanSink
    from gateway.telemetry.upstream import TracingUpstream

    tracer = provider.get_tracer("loopguard")
    gateway = app.state.gateway
    gateway.upstream = TracingUpstream(gateway.upstream, tracer)
    gateway.upstreams = {name: TracingUpstream(other, tracer) for name, other in gateway.upstreams.items()}
    gateway.audit.add(SpanSink())
    app.wrap(TracingMiddleware, tracer=tracer, sessions=gateway.config.sessions)  # outermost
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(target: Any) -> AsyncIterator[Any]:
        async with inner(target) as state:
            try:
                yield state
            finally:
                provider.shutdown()  # exports what is still queued; bounded by the exporter's timeout

    app.router.lifespan_context = lifespan
