"""Shared pieces of the reliability suite: bounded (count and time) so it runs in CI."""

from __future__ import annotations

import socket

import pytest
from hypothesis import HealthCheck, settings
from server.helpers import RawUpstream

# Each example is a real HTTP round trip; the bound keeps the whole suite to well under a
# minute while still covering thousands of shapes across runs (hypothesis varies them).
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture
def closed_port() -> str:
    """An upstream base URL nothing listens on: connection refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def raw_upstream():
    made: list[RawUpstream] = []

    def make(handler) -> RawUpstream:
        made.append(RawUpstream(handler))
        return made[-1]

    yield make
    for server in made:
        server.close()
