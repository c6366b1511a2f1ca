"""What an Azure client gets for a request the gateway or the resource cannot serve: OpenAI's
error shape (Azure's is the same: ``{"error": {"code", "message", ...}}``), the status the SDK
maps to its error class, never a 500."""

from __future__ import annotations

import httpx
import openai
import pytest
from support.azure_upstream import (
    API_VERSION,
    CLIENT_KEY,
    DEPLOYMENT,
    AzureUpstream,
    azure_client,
    azure_gateway,
    start_azure,
)

HI = [{"role": "user", "content": "hi"}]
CHAT = f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={API_VERSION}"
RESPONSES = f"/openai/responses?api-version={API_VERSION}"


@pytest.mark.parametrize("path", [CHAT, RESPONSES, "/openai/v1/chat/completions", "/openai/v1/responses"])
@pytest.mark.parametrize("body", [b"{not json", b"[]", b""])
def test_a_body_that_is_no_json_object_is_refused_in_openais_shape(start_azure, path, body):
    upstream, gateway = start_azure()

    answer = httpx.post(gateway + path, content=body, headers={"api-key": CLIENT_KEY})

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    assert upstream.seen == []


def test_an_unknown_deployment_gets_the_resources_own_not_found(start_azure):
    upstream, gateway = start_azure()

    with pytest.raises(openai.NotFoundError) as caught:
        azure_client(gateway).chat.completions.create(model="no-such-deployment", messages=HI)

    assert caught.value.code == "DeploymentNotFound"
    assert upstream.last["path"] == "/openai/deployments/no-such-deployment/chat/completions"


def test_a_missing_api_version_reaches_the_resource_which_refuses_it(start_azure):
    """The gateway adds no api-version and removes none: the resource decides."""
    upstream, gateway = start_azure()
    path = f"/openai/deployments/{DEPLOYMENT}/chat/completions"

    answer = httpx.post(gateway + path, json={"messages": HI}, headers={"api-key": CLIENT_KEY})

    assert answer.status_code == 404 and answer.json()["error"]["code"] == "404"
    assert upstream.last["query"] == ""


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/openai/responses", 405),
        ("PUT", f"/openai/deployments/{DEPLOYMENT}/chat/completions", 405),
        ("POST", "/openai/Responses", 400),  # another spelling of a guarded route, never relayed
        ("POST", f"/openai/deployments/{DEPLOYMENT}/Chat/Completions", 400),
    ],
)
def test_a_guarded_route_is_reached_by_its_own_spelling_and_method_only(start_azure, method, path, status):
    upstream, gateway = start_azure()

    answer = httpx.request(method, gateway + path, json={"messages": HI}, headers={"api-key": CLIENT_KEY})

    assert answer.status_code == status and answer.json()["error"]["message"]
    assert upstream.seen == [] and upstream.others == []


def test_a_gateway_without_an_azure_resource_says_which_setting_is_missing(tmp_path):
    """No ``upstream.azure_base_url`` (there is no default resource): every Azure route answers
    501 naming it, at once, guarded and relayed alike; the gateway still serves the rest."""
    unused = AzureUpstream()
    with azure_gateway(unused, tmp_path, azure_base_url="") as gateway:
        with pytest.raises(openai.InternalServerError) as caught:
            azure_client(gateway).chat.completions.create(model=DEPLOYMENT, messages=HI)
        relayed = httpx.get(gateway + f"/openai/models?api-version={API_VERSION}", headers={"api-key": "k"})
        health = httpx.get(gateway + "/healthz")

    assert caught.value.status_code == 501 and "upstream.azure_base_url" in caught.value.message
    assert caught.value.code == "upstream_not_configured"
    assert relayed.status_code == 501 and "upstream.azure_base_url" in relayed.json()["error"]["message"]
    assert health.status_code == 200
