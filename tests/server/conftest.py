"""Fixtures of the transport tests (helpers live in ``server.helpers``)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from support.ports import refused_port
from support.servers import serve

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app

from . import helpers
from .helpers import RawUpstream


@pytest.fixture(params=["aiohttp", "httpx"])
def transport(request, monkeypatch) -> str:
    """The upstream client under test: each transport test runs on both (aiohttp is the default)."""
    monkeypatch.setattr(helpers, "TRANSPORT", request.param)  # for ``gateway_for``
    return request.param


@pytest.fixture
def make_gateway(make_gateway, transport):
    """The shared fixture, on the transport under test."""

    def start(**overrides) -> str:
        return make_gateway(**{**overrides, "upstream": {"transport": transport, **overrides.get("upstream", {})}})

    return start


@pytest.fixture
def make_gateway_on(upstream, transport):
    """Like ``make_gateway`` but choosing uvicorn's HTTP parser: production runs httptools
    (``http="auto"``), the shared fixture h11, and the two treat headers differently."""
    started = []

    def start(http: str = "httptools", **overrides) -> str:
        raw = {"upstream": {"base_url": upstream.url + "/v1", "transport": transport}}
        for key, value in overrides.items():
            raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
        ctx = serve(build_app(Config.model_validate(raw)), http=http, **SERVER_OPTIONS)
        started.append(ctx)
        return ctx.__enter__()

    yield start
    for ctx in reversed(started):
        ctx.__exit__(None, None, None)


@pytest.fixture(params=["h11", "httptools"])
def any_gateway(request, make_gateway_on) -> str:
    """The gateway under both HTTP parsers, for byte- and header-level checks."""
    return make_gateway_on(request.param)


@pytest.fixture
def closed_port(transport) -> Iterator[str]:
    """An upstream base URL nothing listens on: connection refused (held for the test, so no
    parallel test's server takes the port)."""
    with refused_port() as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def raw_upstream(transport) -> Iterator[Callable[[Callable[[socket.socket], None]], RawUpstream]]:
    made: list[RawUpstream] = []

    def make(handler: Callable[[socket.socket], None]) -> RawUpstream:
        made.append(RawUpstream(handler))
        return made[-1]

    yield make
    for server in made:
        server.close()
