"""GET /metrics in Prometheus text format."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response


async def metrics_endpoint(request: Request) -> Response:
    gateway = request.app.state.gateway
    return Response(generate_latest(gateway.metrics.exposed), headers={"content-type": CONTENT_TYPE_LATEST})
