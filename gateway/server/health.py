"""Liveness and readiness, answered by the gateway itself (never by the upstream).

/healthz: the process serves HTTP. /readyz: the running policy and the state backend's health.
A state backend that does not answer is reported but does not make the gateway unready: requests
are judged from what they carry while it is down, and a Redis outage must not take every
replica out of its load balancer at once.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    gateway = request.app.state.gateway
    policy = gateway.policies.current
    healthy = await gateway.store.ping()
    return JSONResponse(
        {
            "status": "ready",
            "policy": getattr(policy, "name", None),
            "policy_file": str(gateway.policies.path),
            "state": {"backend": gateway.config.state.backend, "healthy": healthy},
        }
    )
