"""The ASGI application: routes and the shared gateway context."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.config import Config
from gateway.server.chat import chat_completions
from gateway.server.context import Gateway
from gateway.server.passthrough import passthrough
from gateway.upstream.base import Upstream
from gateway.upstream.httpx_transport import HttpxUpstream

_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]

# How the ASGI server must run the app. Relayed responses carry the upstream's own Date and
# Server headers (end-to-end, relayed unchanged); uvicorn would add a second of each, and two
# Date headers make the value unparsable ("date, date") for clients that read it.
SERVER_OPTIONS = {"server_header": False, "date_header": False}


def build_app(config: Config, upstream: Upstream | None = None) -> Starlette:
    gateway = Gateway(
        config=config,
        upstream=upstream or HttpxUpstream(config.upstream),
        log=structlog.get_logger("loopguard"),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.gateway = gateway
        try:
            yield
        finally:
            await gateway.upstream.aclose()

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/{rest:path}", passthrough, methods=_ALL_METHODS),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.gateway = gateway
    return app


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    return JSONResponse({"status": "ready", "upstream": gateway.config.upstream.base_url})
