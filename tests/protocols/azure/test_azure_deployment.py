"""The deployment a path names is the request's model (policy, metrics, savings), and each
Azure protocol is its own ``protocol`` / ``route`` label; the declarations keep Azure's routes
apart from every other protocol's."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.agent import TOOLS
from support.azure_upstream import API_VERSION, CLIENT_KEY, DEPLOYMENT, start_azure
from support.guarded import wait_for
from support.looping import stubborn

from gateway.protocols import registry
from gateway.protocols.azure.deployment import deployment_of


@pytest.mark.parametrize(
    ("path", "deployment"),
    [
        ("/openai/deployments/gpt-4o/chat/completions", "gpt-4o"),
        ("/openai/deployments/my.dep-1/responses", "my.dep-1"),
        ("/openai/v1/chat/completions", None),
        ("/openai/responses", None),
        ("/openai/deployments", None),
        ("/v1/deployments/x/chat/completions", None),
    ],
)
def test_the_deployment_a_path_names(path, deployment):
    assert deployment_of(path) == deployment


@pytest.mark.parametrize(
    ("path", "protocol"),
    [
        ("/openai/deployments/d/chat/completions", "azure_chat"),
        ("/openai/v1/chat/completions", "azure_chat"),
        ("/openai/chat/completions", "azure_chat"),
        ("/openai/responses", "azure_responses"),
        ("/openai/v1/responses", "azure_responses"),
        ("/openai/deployments/d/responses", "azure_responses"),
        ("/v1/chat/completions", "chat"),
        ("/v1/responses", "responses"),
    ],
)
def test_each_route_is_one_protocols(path, protocol):
    found = registry.guarded_route(path)
    assert found is not None and found[1].name == protocol


def samples(gateway: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    families = text_string_to_metric_families(httpx.get(gateway + "/metrics").text)
    return {tuple(sorted(s.labels.items())): s.value for f in families for s in f.samples if s.name == name}


def test_the_deployment_in_the_path_is_the_model_whatever_the_body_says(start_azure):
    """Savings are counted under the deployment (priced when it is named like a priced model);
    the latency series under the protocol's own route label."""
    _upstream, gateway = start_azure(stubborn())
    path = f"/openai/deployments/{DEPLOYMENT}/chat/completions"
    messages: list = [{"role": "user", "content": "summarize a.txt"}]
    for _ in range(6):  # the SDK would put the body's model in the path: by hand instead
        body = {"model": "the-body-says-this", "messages": messages, "tools": TOOLS}
        answer = httpx.post(
            gateway + path, params={"api-version": API_VERSION}, json=body, headers={"api-key": CLIENT_KEY}
        )
        message = answer.json()["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        messages += [message, *({"role": "tool", "tool_call_id": c["id"], "content": "same"} for c in calls)]
        if not calls:
            break

    assert message["content"].startswith("[LoopGuard]")  # the ladder's template: stopped at 5

    def saved():
        return {dict(k)["model"] for k, v in samples(gateway, "loopguard_tokens_saved_total").items() if v > 0}

    assert wait_for(lambda: saved() == {DEPLOYMENT}, timeout=60), saved()
    overhead = samples(gateway, "loopguard_gateway_overhead_seconds_count")
    assert {dict(k)["route"] for k, v in overhead.items() if v} == {"azure_chat"}
