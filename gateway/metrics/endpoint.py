"""GET /metrics in Prometheus text format.

``?name[]=<series>`` (repeatable) answers only the metrics holding those series, as Prometheus'
own client libraries do: a check of one counter need not render every histogram."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response


async def metrics_endpoint(request: Request) -> Response:
    registry: Collector = request.app.state.gateway.metrics.exposed
    names = request.query_params.getlist("name[]")
    if names:
        registry = _Named(registry, frozenset(names))
    return Response(generate_latest(registry), headers={"content-type": CONTENT_TYPE_LATEST})


class _Named(Collector):
    """The metrics of ``registry`` that hold one of ``names`` (a metric or a sample name).
    prometheus_client's ``restricted_registry`` finds only collectors that describe themselves
    up front; the gateway's own collector yields what the running state has."""

    def __init__(self, registry: Collector, names: frozenset[str]) -> None:
        self._registry, self._names = registry, names

    def collect(self) -> Iterator[Metric]:
        for metric in self._registry.collect():
            if metric.name in self._names or any(s.name in self._names for s in metric.samples):
                yield metric
