"""Answers the gateway gives on a route without (or instead of) the upstream's: a body over the
limit, an upstream that failed; each logged as the request's one line."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from gateway.context import Gateway
from gateway.upstream.errors import UpstreamError
from gateway.web.body import BodyTooLarge, read_body
from gateway.web.responses import Shape, error_response, openai_shape


def too_large(gateway: Gateway, shape: Shape = openai_shape) -> Response:
    limit = gateway.config.limits.max_body_bytes
    return error_response(
        413, f"Request body exceeds the gateway limit of {limit} bytes.", code="request_too_large", shape=shape
    )


async def read_or_refuse(
    gateway: Gateway, scope: Mapping[str, Any], receive: Any, started: float, shape: Shape = openai_shape
) -> bytes | Response:
    """The request body, or the logged 413 answer when it is over the configured limit."""
    try:
        return await read_body(scope, receive, gateway.config.limits.max_body_bytes)
    except BodyTooLarge:
        return refused(gateway, scope["method"], scope["path"], too_large(gateway, shape), started)


def refused(gateway: Gateway, method: str, path: str, response: Response, started: float) -> Response:
    """Log the request line of an answer the gateway gave without asking the upstream."""
    gateway.log.info(
        "request",
        method=method,
        path=path,
        status=response.status_code,
        stream=False,
        action="pass",
        upstream_ms=0.0,
        overhead_ms=_ms(time.perf_counter() - started),
    )
    return response


def upstream_failed(
    gateway: Gateway, exc: UpstreamError, path: str, method: str = "POST", shape: Shape = openai_shape
) -> Response:
    # The request line of a failed request: operators count requests by status from these.
    gateway.log.warning(
        "request",
        method=method,
        path=path,
        status=exc.status,
        action="pass",
        error=type(exc).__name__,
        detail=str(exc)[:300],
    )
    kind = _FAILED.get(exc.code, "could not be reached")
    said = f" ({exc})" if exc.shown else ""  # what the operator must fix, when the error says
    return error_response(
        exc.status, f"The upstream model provider {kind}{said}.", type="upstream_error", code=exc.code, shape=shape
    )


_FAILED = {
    "upstream_timeout": "timed out",
    "upstream_invalid_response": "answered with a body that is not its protocol's reply",
    "upstream_unsigned": "cannot be sent a request the gateway changed: the gateway holds no "
    "credentials to sign it (give it the provider's credentials)",
    "upstream_not_configured": "of this route is not configured on the gateway",
    "upstream_token_unavailable": "cannot be sent the request: the gateway's own credentials gave no access token",
    "upstream_token_timeout": "cannot be sent the request yet: the gateway's token endpoint did not answer in time",
}


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)
