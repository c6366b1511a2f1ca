"""Azure's other routes (files, batches, models, deployments, embeddings, ...) reach the Azure
resource as sent; with the operator's key they follow the OpenAI tenancy rule: stored objects
checked per tenant, routes known to keep nothing relayed, any other refused unless shared."""

from __future__ import annotations

import httpx
import openai
import pytest
from support.azure_upstream import API_VERSION, CLIENT_KEY, DEPLOYMENT, azure_client, start_azure
from support.responses_upstream import Answer

SERVER_KEY = "az-server-key"
Q = f"?api-version={API_VERSION}"


def test_an_unguarded_route_goes_to_the_resource_with_its_path_query_and_key(start_azure):
    upstream, gateway = start_azure()

    models = azure_client(gateway).models.list()

    assert [m.id for m in models] == ["gpt-4o"]
    sent = upstream.others[-1]
    assert (sent["path"], sent["query"]) == ("/openai/models", f"api-version={API_VERSION}")
    assert sent["headers"]["api-key"] == CLIENT_KEY
    counted = 'loopguard_unguarded_requests_total{family="azure_responses"} 1.0'
    assert counted in httpx.get(gateway + "/metrics").text


def tenant(gateway: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=gateway, headers={"api-key": key})


@pytest.mark.parametrize("root", ["/openai", "/openai/v1"])
def test_with_the_operators_key_a_tenant_reaches_only_its_own_files(start_azure, root):
    upstream, gateway = start_azure(keys=(SERVER_KEY,), azure_api_key=SERVER_KEY)
    alice, bob = tenant(gateway, "alice"), tenant(gateway, "bob")

    created = alice.post(root + "/files" + Q, files={"file": ("a.jsonl", b"{}")}, data={"purpose": "batch"})
    ident = created.json()["id"]

    assert created.status_code == 200
    assert alice.get(f"{root}/files/{ident}{Q}").status_code == 200
    refused = bob.get(f"{root}/files/{ident}{Q}")
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "file_not_found"
    listing = alice.get(root + "/files" + Q)
    assert listing.status_code == 403 and listing.json()["error"]["code"] == "route_not_shared"
    assert all(r["headers"]["api-key"] == SERVER_KEY for r in upstream.others)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/openai/models", 200),
        ("GET", "/openai/v1/models", 200),
        ("GET", "/openai/deployments", 200),
        ("POST", f"/openai/deployments/{DEPLOYMENT}/embeddings", 200),
        ("POST", "/openai/v1/embeddings", 200),
        ("POST", "/openai/some/new/api", 403),
        ("GET", "/openai/batches", 403),
    ],
)
def test_with_the_operators_key_only_routes_that_keep_nothing_go_freely(start_azure, method, path, status):
    upstream, gateway = start_azure(keys=(SERVER_KEY,), azure_api_key=SERVER_KEY)

    answer = httpx.request(method, gateway + path + Q, json={"input": "x"}, headers={"api-key": "alice"})

    assert answer.status_code == status
    assert len(upstream.others) == (status == 200)


def test_another_tenants_previous_response_is_not_found(start_azure):
    _upstream, gateway = start_azure(
        None, lambda conversation, body: Answer("hello"), (SERVER_KEY,), azure_api_key=SERVER_KEY
    )
    first = azure_client(gateway, api_key="alice").responses.create(model=DEPLOYMENT, input="hi")

    with pytest.raises(openai.NotFoundError) as caught:
        azure_client(gateway, api_key="bob").responses.create(
            model=DEPLOYMENT, input="more", previous_response_id=first.id
        )
    again = azure_client(gateway, api_key="alice").responses.create(
        model=DEPLOYMENT, input="more", previous_response_id=first.id
    )

    assert caught.value.code == "previous_response_not_found" and again.output_text == "hello"
    stored = httpx.get(f"{gateway}/openai/responses/{first.id}{Q}", headers={"api-key": "bob"})
    assert stored.status_code == 404
