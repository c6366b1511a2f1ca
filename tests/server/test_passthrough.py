"""Every other /v1/* route (models, embeddings, files, responses ...) is relayed untouched.

Clients such as Open WebUI call /v1/models at startup, agents embed and upload files through the
same base URL: none of it may break because a loop guard sits in the path.
"""

from __future__ import annotations

import gzip
import time

import httpx
import orjson
import pytest
from support.upstream import Reply

from .helpers import async_sdk, sdk


def test_models_list_sdk_sync(gateway, upstream):
    raw = sdk(gateway + "/v1").models.with_raw_response.list()
    assert [m.id for m in raw.parse()] == ["test-model"]
    assert raw.headers["x-upstream"] == "yes"  # the upstream's own header came back
    assert upstream.last["method"] == "GET" and upstream.last["path"] == "/v1/models"


async def test_models_list_sdk_async(gateway):
    async with async_sdk(gateway + "/v1") as client:
        models = [m.id async for m in client.models.list()]
    assert models == ["test-model"]


EMBEDDING = orjson.dumps(
    {
        "object": "list",
        "model": "text-embedding-3-small",
        "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5, 1.0]}],
        "usage": {"prompt_tokens": 2, "total_tokens": 2},
    }
)


@pytest.mark.parametrize("base", ["/v1"])
def test_embeddings_sdk(gateway, upstream, base):
    upstream.passthrough_script.append(Reply(body=EMBEDDING))
    result = sdk(gateway + base).embeddings.create(
        model="text-embedding-3-small", input="hello", encoding_format="float"
    )
    assert result.data[0].embedding == [0.25, -0.5, 1.0]
    assert upstream.last["path"] == "/v1/embeddings"
    assert orjson.loads(upstream.last["raw"])["input"] == "hello"


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_any_method_relayed_with_body_and_query(any_gateway, upstream, method):
    body = b"" if method == "GET" else b'{"purpose": "batch", "odd" :  [1,2 ]}'
    upstream.passthrough_script.append(Reply(status=201, body=b'{"answer":"\\u00e9"}', headers={"x-from": "up"}))
    response = httpx.request(method, any_gateway + "/v1/files/file-abc/content?limit=2&after=a%20b&flag", content=body)
    assert (response.status_code, response.content) == (201, b'{"answer":"\\u00e9"}')
    assert response.headers["x-from"] == "up"
    seen = upstream.last
    assert (seen["method"], seen["path"], seen["query"], seen["raw"]) == (
        method,
        "/v1/files/file-abc/content",
        b"limit=2&after=a%20b&flag",
        body,
    )


def test_head_is_relayed_without_a_body(gateway, upstream):
    response = httpx.head(gateway + "/v1/models")
    assert response.status_code == 200 and response.content == b""
    assert upstream.last["method"] == "HEAD"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions", "/v1/models"])
def test_query_string_kept_exactly(gateway, upstream, path):
    query = b"api-version=2024-10-21&x=%E2%9C%93&empty=&dup=1&dup=2"
    method = "GET" if path.endswith("models") else "POST"
    body = None if method == "GET" else b'{"model":"m","messages":[]}'
    response = httpx.request(method, f"{gateway}{path}?{query.decode()}", content=body)
    assert response.status_code == 200
    assert upstream.last["query"] == query


@pytest.mark.parametrize("base", ["", "/v1"], ids=["without-v1", "with-v1"])
@pytest.mark.parametrize("stream", [False, True])
def test_sdk_base_url_with_or_without_v1(gateway, upstream, base, stream):
    upstream.queue(Reply(content="either way"))
    result = sdk(gateway + base).chat.completions.create(model="m", messages=[], stream=stream)
    text = (
        "".join(c.choices[0].delta.content or "" for c in result if c.choices)
        if stream
        else result.choices[0].message.content
    )
    assert text == "either way"
    assert upstream.last["path"] == "/v1/chat/completions"


def test_compressed_passthrough_body_is_relayed_not_mangled(gateway, upstream):
    # Non-chat responses are relayed as raw bytes with their Content-Encoding: decoding here but
    # keeping the header (or the reverse) would corrupt every gzip answer.
    plain = orjson.dumps({"object": "list", "data": [{"id": f"model-{i}"} for i in range(200)]})
    packed = gzip.compress(plain)
    upstream.passthrough_script.append(Reply(body=packed, headers={"content-encoding": "gzip"}))
    response = httpx.get(gateway + "/v1/models", headers={"accept-encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.content == plain  # httpx decoded exactly the upstream's gzip bytes
    assert upstream.last["headers"]["accept-encoding"] == "gzip"


def test_large_upload_relayed_byte_for_byte(gateway, upstream):
    blob = bytes(range(256)) * 8192  # 2 MiB of every byte value
    response = httpx.post(gateway + "/v1/files", content=blob, headers={"content-type": "application/octet-stream"})
    assert response.status_code == 200
    assert upstream.last["raw"] == blob


def test_passthrough_streams_without_buffering(gateway, upstream):
    # e.g. the Responses API streamed: the first event arrives while the upstream still produces.
    events = [b'data: {"type":"response.output_text.delta","delta":"%d"}\n\n' % i for i in range(10)]
    upstream.passthrough_script.append(Reply(raw_stream=events, chunk_delay=0.2))
    arrivals, finished_at_first, received = [], None, b""
    with httpx.stream("POST", gateway + "/v1/responses", json={"model": "m", "stream": True}) as response:
        for chunk in response.iter_raw():
            if chunk and not arrivals:
                finished_at_first = upstream.finished_streams
            arrivals.append(time.monotonic())
            received += chunk
    # relayed as they came; the stream ended without response.completed, so the gateway closes
    # it with response.failed
    assert received.startswith(b"".join(events)) and b"response.failed" in received[len(b"".join(events)) :]
    assert finished_at_first == 0
    assert arrivals[-1] - arrivals[0] > 1.2  # ~1.8 s unbuffered, ~0 buffered


def test_unknown_route_outside_v1_is_not_proxied(gateway, upstream):
    # Only /v1/* and the chat route are the upstream's; anything else is not forwarded.
    response = httpx.get(gateway + "/admin")
    assert response.status_code == 404
    assert upstream.requests == []
