"""The latency histograms break down by route, the protocol: chat completions, the Responses API
and Anthropic Messages each get their own series, whatever path spelling the client used, scraped
from a real gateway after requests on each protocol, streamed and not."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.protocols import all_protocols, one_of_each

from gateway.metrics.registry import GatewayMetrics, route_of
from gateway.protocols.registry import KINDS

ROUTES = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/{version}/models/{model}:generateContent",
    "/openai/deployments/{deployment}/chat/completions",
    "/openai/responses",
)
# the ones asked; every other one's series is at 0
PROTOCOLS = ("chat", "responses", "anthropic", "gemini", "converse", "azure_chat", "azure_responses")
HISTOGRAMS = ("loopguard_gateway_overhead_seconds", "loopguard_upstream_seconds")


def counts(url: str) -> dict[tuple[str, str], float]:
    """(histogram, route) -> observations: every protocol's series, from startup."""
    found = {}
    for family in text_string_to_metric_families(httpx.get(url + "/metrics").text):
        for sample in family.samples:
            if sample.name.endswith("_count") and family.name in HISTOGRAMS:
                found[(family.name, sample.labels["route"])] = sample.value
    return found


@pytest.mark.parametrize("stream", [False, True])
def test_each_guarded_protocol_has_its_own_latency_series(tmp_path, stream):
    with all_protocols(tmp_path) as gateway:
        one_of_each(gateway, stream=stream)
        one_of_each(gateway, stream=stream)
        observed = counts(gateway.url)
    assert observed == {(name, k.name): 2 * (k.name in PROTOCOLS) for name in HISTOGRAMS for k in KINDS}


def test_the_routes_without_v1_count_as_their_protocol(tmp_path):
    with all_protocols(tmp_path) as gateway:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        assert httpx.post(gateway.url + "/messages", json=body, headers={"x-api-key": "k"}).status_code == 200
        assert (
            httpx.post(
                gateway.url + "/responses", json={"model": "m", "input": "hi"}, headers={"authorization": "Bearer k"}
            ).status_code
            == 200
        )
        observed = counts(gateway.url)
    # every protocol's series exists from startup (at 0); the ones asked count their request
    asked = ("responses", "anthropic")
    assert observed == {(name, k.name): int(k.name in asked) for name in HISTOGRAMS for k in KINDS}


def test_requests_count_each_protocol_under_its_route(tmp_path):
    with all_protocols(tmp_path) as gateway:
        one_of_each(gateway)
        text = httpx.get(gateway.url + "/metrics").text
    for route in ROUTES:
        # google-genai asks under its default API version: v1 from 3.0 on, v1beta before
        spellings = {route.replace("{version}", version) for version in ("v1", "v1beta")}
        assert sum(f'loopguard_requests_total{{route="{r}",status="200"}} 1.0' in text for r in spellings) == 1


def test_route_values_stay_bounded():
    assert route_of("/v1/responses") == "/v1/responses" and route_of("/messages") == "/messages"
    assert route_of("/v1/responses/resp_1") == "/v1/*"  # relayed sub-routes share one value
    assert route_of("/v1/messages/count_tokens") == "/v1/*" and route_of("/anything") == "other"
    metrics = GatewayMetrics()
    for _ in range(50):
        metrics.exchange_done("chat", 0.001, 0.1)
    assert metrics.registry.get_sample_value("loopguard_upstream_seconds_count", {"route": "chat"}) == 50
    assert len(metrics._children) == 1  # one cached pair of children per route value
