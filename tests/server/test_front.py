"""The front: gates in order, then the guarded route by exact path and method, else the rest."""

from __future__ import annotations

import asyncio

import pytest

from gateway.metrics.registry import GatewayMetrics
from gateway.server.front import Front
from gateway.server.refusal import Refusal


def app_named(name: str, calls: list[str]):
    async def app(scope, receive, send):
        calls.append(name)
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": name.encode()})

    return app


def refusing(status: int):
    return lambda scope: Refusal(status, "no", "invalid_request_error", "nope")


def passing(seen: list[str], tag: str):
    def gate(scope):
        seen.append(tag)
        return {**scope, "headers": [*scope["headers"], (b"x-seen", tag.encode())]}

    return gate


def call(front: Front, method: str, path: str) -> list[dict]:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "headers": [],
        "query_string": b"",
    }
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(front(scope, receive, send))
    return sent


def front_with(gates, calls: list[str], metrics: GatewayMetrics | None = None) -> Front:
    guarded = {"/v1/chat/completions": app_named("guarded", calls)}
    return Front(guarded, app_named("fallback", calls), tuple(gates), metrics or GatewayMetrics(), 5.0)


@pytest.mark.parametrize(
    ("method", "path", "reached"),
    [
        ("POST", "/v1/chat/completions", "guarded"),
        ("GET", "/v1/chat/completions", "fallback"),  # stored completions are relayed, not judged
        ("POST", "/v1/chat/completions/abc", "fallback"),
        ("POST", "/v1/embeddings", "fallback"),
    ],
)
def test_the_guarded_route_is_found_by_exact_path_and_post(method, path, reached):
    calls: list[str] = []
    sent = call(front_with([], calls), method, path)
    assert calls == [reached] and sent[-1]["body"] == reached.encode()


@pytest.mark.parametrize(
    ("gates", "status", "seen"),
    [
        (["refuse 400", "pass a"], 400, []),
        (["pass a", "refuse 401"], 401, ["a"]),
        (["pass a", "pass b"], 200, ["a", "b"]),
    ],
)
def test_gates_run_in_order_and_a_refusal_ends_the_request(gates, status, seen):
    calls: list[str] = []
    order: list[str] = []
    built = [refusing(int(g.split()[1])) if g.startswith("refuse") else passing(order, g.split()[1]) for g in gates]
    metrics = GatewayMetrics()
    sent = call(front_with(built, calls, metrics), "POST", "/v1/chat/completions")
    assert sent[0]["status"] == status and order == seen
    assert calls == ([] if status != 200 else ["guarded"])
    assert metrics.requests.labels("/v1/chat/completions", str(status))._value.get() == 1


def test_an_app_that_raises_before_answering_is_counted_as_500_and_the_error_propagates():
    async def broken(scope, receive, send):
        raise RuntimeError("bug")

    metrics = GatewayMetrics()
    front = Front({"/v1/chat/completions": broken}, broken, (), metrics, 5.0)
    with pytest.raises(RuntimeError):
        call(front, "POST", "/v1/chat/completions")
    assert metrics.requests.labels("/v1/chat/completions", "500")._value.get() == 1


def test_a_later_gate_sees_the_scope_an_earlier_one_returned():
    seen_headers = []

    def second(scope):
        seen_headers.append(dict(scope["headers"]))
        return scope

    calls: list[str] = []
    call(front_with([passing([], "a"), second], calls), "POST", "/v1/chat/completions")
    assert seen_headers == [{b"x-seen": b"a"}]
