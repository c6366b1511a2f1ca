"""/readyz reports the state backend's health: a real Redis up, down and back; memory always."""

from __future__ import annotations

import httpx
from support.servers import serve

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app


def ready(url: str) -> httpx.Response:
    return httpx.get(url + "/readyz", timeout=10)


def test_memory_backend_is_always_healthy(upstream):
    app = build_app(Config.model_validate({"upstream": {"base_url": upstream.url + "/v1"}}))
    with serve(app, **SERVER_OPTIONS) as url:
        response = ready(url)
    assert response.status_code == 200
    assert response.json()["state"] == {"backend": "memory", "healthy": True}


def test_redis_health_follows_the_server(upstream, redis_server):
    config = Config.model_validate(
        {
            "upstream": {"base_url": upstream.url + "/v1"},
            "state": {"backend": "redis", "url": redis_server.url, "op_timeout_s": 2.0},
        }
    )
    app = build_app(config)
    with serve(app, **SERVER_OPTIONS) as url:
        assert ready(url).json()["state"] == {"backend": "redis", "healthy": True}
        redis_server.stop()
        down = ready(url)
        # Reported, but still ready: the gateway serves without its state.
        assert down.status_code == 200 and down.json()["state"] == {"backend": "redis", "healthy": False}
        assert app.state.gateway.store.degradations == 0  # a probe is not traffic
        redis_server.start()
        assert ready(url).json()["state"]["healthy"] is True
    assert upstream.requests == []
