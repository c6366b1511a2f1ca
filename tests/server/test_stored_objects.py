"""A hostile tenant against every stored-object route, by every spelling, through a real gateway.

Two tenants (``auth.keys``) share the gateway's own upstream keys (OpenAI, Anthropic, Gemini),
and the upstream answers anything: whatever tenant B reaches there, it gets. Tenant A creates
objects of every family the upstreams keep; B may neither read, list, continue nor delete them,
by the documented path or any other spelling an upstream would resolve, nor name them inside a
body. A uses its own. Without a server key nothing is checked; ``auth.shared_routes`` re-opens a
family.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import openai
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support.redis_server import RedisServer
from support.servers import serve

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app

KEYS = [{"key": "sk-a", "tenant": "a"}, {"key": "sk-b", "tenant": "b"}]
A = {"authorization": "Bearer sk-a"}
B = {"authorization": "Bearer sk-b"}


class AnyUpstream:
    """Answers every method on every path, as a provider holding every tenant's objects would:
    a created object gets a fresh id (``id``, and Google's ``name``), a model call a reply."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.ids = itertools.count(1)
        self.fine_tuned: str | None = None  # what a fine-tuning job answers it made
        self.app = Starlette(
            routes=[Route("/{rest:path}", self.answer, methods=["GET", "POST", "DELETE", "PUT", "PATCH"])]
        )

    async def answer(self, request: Request) -> Response:
        path = request.url.path
        self.requests.append((request.method, path))
        n = next(self.ids)
        if request.method != "POST":
            body: dict = {"object": "thing", "path": path, "fine_tuned_model": self.fine_tuned}
        elif path.endswith("/responses"):
            body = {
                "id": f"resp_{n}",
                "object": "response",
                "status": "completed",
                "model": "m",
                "output": [
                    {
                        "type": "message",
                        "id": f"msg_{n}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
                    }
                ],
            }
        elif path.endswith("/chat/completions") and orjson.loads(await request.body()).get("stream"):
            chunks = [
                {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [c]}
                for c in (
                    {"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None},
                    {"index": 0, "delta": {}, "finish_reason": "stop"},
                )
            ]
            events = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            return Response(events, media_type="text/event-stream")
        elif path.endswith("/chat/completions"):
            body = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            }
        elif ":generateContent" in path:
            body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
        else:
            collection = path.rstrip("/").rpartition("/")[2]
            body = {
                "id": f"obj_{n}",
                "name": f"{collection}/obj_{n}",
                "metadata": {"tunedModel": f"tunedModels/obj_{n}"},
                "output_file_id": f"out_{n}",
            }
        return Response(orjson.dumps(body), media_type="application/json")

    def saw(self, fragment: str) -> bool:
        return any(fragment in path for _, path in self.requests)


@pytest.fixture
def upstream() -> Iterator[tuple[AnyUpstream, str]]:
    up = AnyUpstream()
    with serve(up.app) as url:
        yield up, url


def start(url: str, server_key: bool = True, state: dict | None = None, **auth) -> Iterator[str]:
    keys = (
        {"api_key": "sk-server", "anthropic_api_key": "sk-ant-server", "gemini_api_key": "g-server"}
        if server_key
        else {}
    )
    # A base URL without /v1: an upstream that resolves /v1/v1/... to its own objects.
    upstream = {"base_url": url, "anthropic_base_url": url, "gemini_base_url": url, **keys}
    config = Config.model_validate({"upstream": upstream, "auth": {"keys": KEYS, **auth}, "state": state or {}})
    with serve(build_app(config), **SERVER_OPTIONS) as gateway:
        yield gateway


@pytest.fixture(params=["memory", "redis"])
def gateway(request, upstream, tmp_path) -> Iterator[str]:
    """The gateway on each state backend: who created what is state."""
    if request.param == "memory":
        yield from start(upstream[1])
        return
    redis = RedisServer(tmp_path).start()
    try:
        yield from start(upstream[1], state={"backend": "redis", "url": redis.url})
    finally:
        redis.stop()


def send(gateway: str, method: str, path: str, headers: dict, body: dict | None = None) -> httpx.Response:
    return httpx.request(method, gateway + path, headers=headers, json=body, timeout=20)


# Families created by POST {collection}: (collection, how the id appears in paths).
CREATED = [
    "/v1/conversations",
    "/v1/files",
    "/v1/uploads",
    "/v1/batches",
    "/v1/vector_stores",
    "/v1/threads",
    "/v1/assistants",
    "/v1/fine_tuning/jobs",
    "/v1/containers",
    "/v1/evals",
    "/v1/messages/batches",
    "/v1beta/cachedContents",
    "/v1beta/files",
    "/v1beta/corpora",
    "/v1beta/fileSearchStores",
]
# What hangs below an object, probed for every family.
BELOW = ["", "/content", "/messages", "/items", "/results", "/runs/run_1", ":generateContent"]


def created(gateway: str, collection: str) -> str:
    answer = send(gateway, "POST", collection, A, {"name": "mine"})
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


@pytest.mark.parametrize("collection", CREATED)
def test_another_tenant_reaches_no_stored_object_by_any_method_or_sub_route(gateway, upstream, collection):
    up, _ = upstream
    ident = created(gateway, collection)
    for method, below in itertools.product(["GET", "POST", "DELETE"], BELOW):
        refused = send(gateway, method, f"{collection}/{ident}{below}", B)
        assert refused.status_code == 404, (method, below, refused.text)
    assert [r for r in up.requests if ident in r[1]] == [], "nothing of B's reached the upstream"
    assert send(gateway, "GET", f"{collection}/{ident}", A).status_code == 200  # A reads its own
    assert send(gateway, "DELETE", f"{collection}/{ident}", A).status_code == 200


SPELLINGS = [
    "/v1/v1/responses/{id}",
    "/v1/Responses/{id}",
    "/V1/responses/{id}",
    "/v1/responses./{id}",
    "/v1/responses;x/{id}",
    "/responses/{id}",
    "/v1/v1/v1/responses/{id}/input_items",
    "/v1/v1/conversations/{id}/items",
    "/v1/Conversations/{id}",
    "/v1/v1/files/{id}/content",
    "/v1/chat/Completions/{id}/messages",
    "/v1/v1/messages/batches/{id}/results",
    "/v1/v1beta/cachedContents/{id}",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_another_spelling_of_a_stored_object_route_never_reaches_the_upstream(gateway, upstream, spelling, method):
    up, _ = upstream
    mine = send(gateway, "POST", "/v1/responses", A, {"model": "m", "input": "hi"}).json()["id"]
    refused = send(gateway, method, spelling.format(id=mine), B)
    assert refused.status_code in (400, 403), refused.text
    assert refused.json()["error"]["code"] in ("invalid_path", "route_not_shared")
    assert not up.saw(mine)


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/v1/chat/completions"),
        ("GET", "/v1/files"),
        ("GET", "/v1/batches"),
        ("GET", "/v1/vector_stores"),
        ("GET", "/v1/assistants"),
        ("GET", "/v1/conversations"),
        ("GET", "/v1/messages/batches"),
        ("GET", "/v1beta/cachedContents"),
        ("GET", "/v1beta/files"),
        ("GET", "/v1/organization/users"),  # a route the gateway does not know
        ("POST", "/v1/realtime/sessions"),
        ("POST", "/v1beta/models/m:batchGenerateContent"),
    ],
)
def test_a_route_no_tenant_check_covers_is_refused_naming_the_setting(gateway, upstream, method, path):
    refused = send(gateway, method, path, A)
    assert refused.status_code == 403
    assert "auth.shared_routes" in refused.text
    assert upstream[0].requests == []


@pytest.mark.parametrize(
    "method,path", [("GET", "/v1/models"), ("POST", "/v1/embeddings"), ("POST", "/v1/messages/count_tokens")]
)
def test_a_route_that_stores_nothing_is_relayed(gateway, upstream, method, path):
    assert send(gateway, method, path, B, {"model": "m", "input": "x"} if method == "POST" else None).status_code == 200
    assert upstream[0].requests


def test_a_body_naming_another_tenants_object_is_refused(gateway, upstream):
    up, _ = upstream
    file = created(gateway, "/v1/files")
    cache = send(gateway, "POST", "/v1beta/cachedContents", A, {"model": "m"}).json()["name"]
    store = send(gateway, "POST", "/v1/vector_stores", B, {}).json()["id"]
    before = len(up.requests)
    probes = [
        ("/v1/batches", {"input_file_id": file, "endpoint": "/v1/responses"}),
        (f"/v1/vector_stores/{store}/files", {"file_id": file}),
        ("/v1/vector_stores", {"file_ids": ["file_mine", file]}),
        ("/v1/images/edits", {"images": [{"file_id": file}]}),
        (
            "/v1/responses",
            {"model": "m", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": file}]}]},
        ),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": file}}]}]},
        ),
        (
            "/v1beta/models/m:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "cachedContent": cache},
        ),
    ]
    for path, body in probes:
        refused = send(gateway, "POST", path, B, body)
        assert refused.status_code == 404, (path, refused.text)
    assert len(up.requests) == before
    # A names its own: relayed.
    assert send(gateway, "POST", "/v1/batches", A, {"input_file_id": file}).status_code == 200


def test_objects_an_answer_names_are_the_tenants_own(gateway, upstream):
    """A batch's output file, created for A by the upstream, is A's to read, not B's."""
    batch = created(gateway, "/v1/batches")
    output = send(gateway, "GET", f"/v1/batches/{batch}", A)  # answers (created) output_file_id
    assert output.status_code == 200
    made = send(gateway, "POST", "/v1/batches", A, {}).json()["output_file_id"]
    assert send(gateway, "GET", f"/v1/files/{made}/content", A).status_code == 200
    assert send(gateway, "GET", f"/v1/files/{made}/content", B).status_code == 404


def test_a_stored_chat_completion_is_its_tenants(gateway):
    mine = send(
        gateway,
        "POST",
        "/v1/chat/completions",
        A,
        {"model": "m", "store": True, "messages": [{"role": "user", "content": "hi"}]},
    )
    ident = mine.json()["id"]
    for path in (f"/v1/chat/completions/{ident}", f"/v1/chat/completions/{ident}/messages"):
        assert send(gateway, "GET", path, B).status_code == 404
        assert send(gateway, "GET", path, A).status_code == 200
    assert send(gateway, "DELETE", f"/v1/chat/completions/{ident}", B).status_code == 404


def test_a_stored_chat_completion_streamed_is_its_tenants(gateway):
    """A streamed completion carries its id in every chunk: the tenant that streamed it reads
    it back, another does not."""
    client = openai.OpenAI(base_url=gateway + "/v1", api_key=A["authorization"].removeprefix("Bearer "), max_retries=0)
    stream = client.chat.completions.create(
        model="m", store=True, stream=True, messages=[{"role": "user", "content": "hi"}]
    )
    ident = {chunk.id for chunk in stream}.pop()
    assert send(gateway, "GET", f"/v1/chat/completions/{ident}", A).status_code == 200
    assert send(gateway, "GET", f"/v1/chat/completions/{ident}", B).status_code == 404


def test_a_tuned_model_of_another_tenant_is_not_generated_with(gateway):
    tuned = send(gateway, "POST", "/v1beta/tunedModels", A, {}).json()["metadata"]["tunedModel"]
    refused = send(
        gateway,
        "POST",
        f"/v1beta/{tuned}:generateContent",
        B,
        {"contents": [{"role": "user", "parts": [{"text": "x"}]}]},
    )
    assert refused.status_code == 404, refused.text


@pytest.mark.parametrize("value", [["resp_1"], {"id": "resp_1"}, 7, True])
@pytest.mark.parametrize("key", ["previous_response_id", "conversation"])
def test_a_reference_that_is_no_id_is_a_400_never_a_skipped_check(gateway, upstream, key, value):
    if key == "conversation" and isinstance(value, dict):
        value = {"id": ["conv_1"]}
    refused = send(gateway, "POST", "/v1/responses", B, {"model": "m", "input": "hi", key: value})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert upstream[0].requests == []


def test_a_thread_reference_that_is_no_id_is_a_400(gateway, upstream):
    body = {
        "model": "c",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
        "thread": {"type": "continue", "previous_message_id": ["msg_1"]},
    }
    refused = send(gateway, "POST", "/v1/messages", {"x-api-key": "sk-b"}, body)
    assert refused.status_code == 400 and refused.json()["type"] == "error"
    assert upstream[0].requests == []


def test_without_a_server_key_nothing_is_checked(upstream):
    up, url = upstream
    for gateway in start(url, server_key=False):
        assert send(gateway, "GET", "/v1/files", B).status_code == 200
        assert send(gateway, "GET", "/v1/files/file_1/content", B).status_code == 200
        assert send(gateway, "GET", "/v1/v1/responses/resp_1", B).status_code == 200
        assert up.saw("/files/file_1/content") and up.saw("/v1/responses/resp_1")


def test_shared_routes_reopen_a_family(upstream):
    _, url = upstream
    for gateway in start(url, shared_routes=["/v1/files", "GET /v1/batches"]):
        file = created(gateway, "/v1/files")
        assert send(gateway, "GET", "/v1/files", B).status_code == 200
        assert send(gateway, "GET", f"/v1/files/{file}/content", B).status_code == 200
        assert send(gateway, "POST", "/v1/batches", B, {"input_file_id": file}).status_code == 200
        assert send(gateway, "GET", "/v1/batches", B).status_code == 200
        assert send(gateway, "DELETE", "/v1/batches", B).status_code == 403  # GET only
        assert send(gateway, "GET", "/v1/vector_stores", B).status_code == 403


def test_a_body_nested_as_deep_as_json_allows_is_read_without_a_gateway_error(gateway, upstream):
    deep = '{"input": ' + '{"next": [' * 500 + '"file_x"' + "]}" * 500 + "}"  # 1001 levels: orjson's limit
    for path in ("/v1/batches", "/v1/responses"):
        answer = httpx.post(gateway + path, headers={**B, "content-type": "application/json"}, content=deep)
        assert answer.status_code < 500, answer.text


def test_a_fine_tuned_model_is_its_tenants(gateway, upstream):
    up, _ = upstream
    job = created(gateway, "/v1/fine_tuning/jobs")
    up.fine_tuned = "ft:gpt-4o-mini:org::abc"
    assert send(gateway, "GET", f"/v1/fine_tuning/jobs/{job}", A).json()["fine_tuned_model"] == up.fine_tuned
    ask = {"model": up.fine_tuned, "messages": [{"role": "user", "content": "hi"}]}
    assert send(gateway, "POST", "/v1/chat/completions", B, ask).status_code == 404
    assert send(gateway, "POST", "/v1/chat/completions", A, ask).status_code == 200
    assert send(gateway, "POST", "/v1/chat/completions", B, {**ask, "model": "gpt-4o-mini"}).status_code == 200
