"""Prometheus metrics: one CollectorRegistry per app (several gateways can share a process, as
tests do), counters bumped on the hot path through cached label children, and a collector that
reads the slower-moving state (fail-opens, store degradations, reloads, audit sinks) on scrape."""

from gateway.metrics.registry import GatewayMetrics, MetricsSink

__all__ = ["GatewayMetrics", "MetricsSink"]
