"""Liveness and readiness: answered by the gateway itself, whatever the upstream is doing."""

from __future__ import annotations

import httpx
import pytest

from .helpers import gateway_for


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_endpoints(gateway, upstream, path):
    response = httpx.get(gateway + path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert isinstance(response.json(), dict)
    assert upstream.requests == []  # a health probe never costs an upstream call


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_does_not_depend_on_the_upstream(closed_port, path):
    # Orchestrators restart a container whose liveness fails; a provider outage must not do that.
    with gateway_for(closed_port) as url:
        assert httpx.get(url + path).status_code == 200


def test_health_is_get_only(gateway):
    assert httpx.post(gateway + "/healthz").status_code == 405
