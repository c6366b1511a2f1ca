"""Errors: the gateway's own are OpenAI-shaped with the right status; the upstream's pass as they are.

Whatever goes wrong, the client gets a status an SDK understands (never a 500 of the gateway's
making) and never a stack trace.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.upstream import Reply

from .helpers import async_sdk, error_shape, gateway_for, sdk

CHAT_PATHS = ["/v1/chat/completions", "/chat/completions"]

INVALID_JSON = {
    "empty": b"",
    "truncated": b'{"model": "m", "messages": [',
    "trailing comma": b'{"model": "m",}',
    "not json": b"model=m&messages=[]",
    "invalid utf-8": b'{"model": "\xff\xfe"}',
    "single quotes": b"{'model': 'm'}",
}
NOT_AN_OBJECT = {
    "list": b"[]",
    "list of objects": b'[{"model": "m"}]',
    "string": b'"hello"',
    "number": b"42",
    "null": b"null",
    "bool": b"true",
}


@pytest.mark.parametrize("path", CHAT_PATHS)
@pytest.mark.parametrize("body", [*INVALID_JSON.values(), *NOT_AN_OBJECT.values()], ids=[*INVALID_JSON, *NOT_AN_OBJECT])
def test_bad_body_is_400_openai_error_and_not_forwarded(gateway, upstream, path, body):
    response = httpx.post(gateway + path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    error = error_shape(response)
    assert error["type"] == "invalid_request_error"
    assert upstream.requests == []


def test_sdk_raises_bad_request_with_the_gateway_message(gateway, upstream):
    # The SDK can be made to send a non-object body; it must surface as a typed 400.
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gateway + "/v1").post("/chat/completions", body=["not", "an", "object"], cast_to=object)
    raw = httpx.post(gateway + "/v1/chat/completions", json=["not", "an", "object"])
    assert caught.value.status_code == 400
    assert caught.value.body == raw.json()["error"]  # the SDK parsed our envelope, not a fallback
    assert raw.json()["error"]["message"] in caught.value.message
    assert upstream.requests == []


async def test_async_sdk_raises_bad_request(gateway):
    async with async_sdk(gateway + "/v1") as client:
        with pytest.raises(openai.BadRequestError):
            await client.post("/chat/completions", body="a string", cast_to=object)


# ---- body size limit ----------------------------------------------------------------------------

LIMIT = 1000


def _body_of(size: int) -> bytes:
    prefix, suffix = b'{"model":"m","messages":[],"pad":"', b'"}'
    return prefix + b"x" * (size - len(prefix) - len(suffix)) + suffix


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions", "/v1/embeddings"])
def test_body_over_limit_is_413(make_gateway, upstream, framing, path):
    url = make_gateway(limits={"max_body_bytes": LIMIT})
    body = _body_of(LIMIT + 1)
    content = body if framing == "content-length" else iter([body[:500], body[500:]])
    response = httpx.post(url + path, content=content)
    assert response.status_code == 413
    error_shape(response)
    assert upstream.requests == []


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_far_over_limit_still_gets_413_not_a_reset(make_gateway_on, upstream, framing):
    # The gateway answers before reading an oversized body; the client, still uploading, must
    # get the 413 rather than a connection reset (which SDKs retry as a network error).
    url = make_gateway_on(limits={"max_body_bytes": LIMIT})
    body = _body_of(8 * 1024 * 1024)
    content = body if framing == "content-length" else iter([body[i : i + 65536] for i in range(0, len(body), 65536)])
    response = httpx.post(url + "/v1/chat/completions", content=content, timeout=30)
    assert response.status_code == 413
    assert upstream.requests == []


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_body_at_limit_is_forwarded(make_gateway, upstream, framing):
    url = make_gateway(limits={"max_body_bytes": LIMIT})
    body = _body_of(LIMIT)
    content = body if framing == "content-length" else iter([body[:500], body[500:]])
    response = httpx.post(url + "/v1/chat/completions", content=content)
    assert response.status_code == 200
    assert upstream.last["raw"] == body


# ---- the upstream cannot be reached or is too slow ------------------------------------------------

REQUESTS = {  # what a client may be doing when the upstream fails
    "chat": ("POST", "/v1/chat/completions", {"model": "m", "messages": []}),
    "chat stream": ("POST", "/v1/chat/completions", {"model": "m", "messages": [], "stream": True}),
    "chat without /v1": ("POST", "/chat/completions", {"model": "m", "messages": []}),
    "models": ("GET", "/v1/models", None),
    "embeddings": ("POST", "/v1/embeddings", {"model": "e", "input": "x"}),
}


@pytest.mark.parametrize("name", REQUESTS)
def test_connection_refused_is_502(closed_port, name):
    method, path, body = REQUESTS[name]
    with gateway_for(closed_port) as url:
        response = httpx.request(method, url + path, json=body)
    assert response.status_code == 502
    assert error_shape(response)["type"]


def _reset(conn: socket.socket) -> None:
    # SO_LINGER 0: close with RST, the "connection reset by peer" of a crashed upstream.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


@pytest.mark.parametrize("name", ["chat", "chat stream", "models"])
def test_connection_reset_is_502(raw_upstream, name):
    method, path, body = REQUESTS[name]
    with gateway_for(raw_upstream(_reset).url) as url:
        response = httpx.request(method, url + path, json=body)
    assert response.status_code == 502
    error_shape(response)


def test_sdk_sees_502_as_internal_server_error(closed_port):
    with gateway_for(closed_port) as url:
        with pytest.raises(openai.InternalServerError) as caught:
            sdk(url + "/v1").chat.completions.create(model="m", messages=[])
    assert caught.value.status_code == 502


@pytest.mark.parametrize("name", ["chat", "chat stream", "chat without /v1", "embeddings"])
def test_upstream_timeout_is_504(make_gateway, upstream, name):
    method, path, body = REQUESTS[name]
    url = make_gateway(upstream={"timeout_s": 0.3})
    slow = Reply(content="late", delay=1.0)  # it would answer, only later than timeout_s
    upstream.queue(slow)
    upstream.passthrough_script.append(slow)
    response = httpx.request(method, url + path, json=body, timeout=10)
    assert response.status_code == 504
    error_shape(response)


async def test_async_sdk_sees_504(make_gateway, upstream):
    url = make_gateway(upstream={"timeout_s": 0.3})
    upstream.queue(Reply(delay=1.0))
    async with async_sdk(url + "/v1") as client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model="m", messages=[])
    assert caught.value.status_code == 504


# ---- a stream that breaks after it started must not look complete --------------------------------


def _die_mid_stream(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    first = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}\n\n'
    conn.sendall(b"%x\r\n%s\r\n" % (len(first), first))
    time.sleep(0.2)
    _reset(conn)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_upstream_dying_mid_stream_ends_the_client_stream_with_an_error(raw_upstream, path):
    # Directly, the client sees a broken stream; through the gateway it must too. Ending the relay
    # cleanly would hand the agent a truncated answer (half a tool call) as if it were complete.
    up = raw_upstream(_die_mid_stream)
    body = {"model": "m", "messages": [], "stream": True}
    with pytest.raises(httpx.HTTPError):
        with httpx.stream("POST", up.url + path.removeprefix("/v1"), json=body) as response:
            response.read()
    with gateway_for(up.url) as url:  # through the gateway: ended with the protocol's error
        with httpx.stream("POST", url + path, json=body) as response:
            assert response.status_code == 200
            events = response.read().split(b"\n\n")[:-1]
    ending = {"/v1/chat/completions": b'data: {"error"', "/v1/responses": b"event: response.failed"}[path]
    last = events[-2] if path == "/v1/chat/completions" else events[-1]
    assert last.startswith(ending) and b"upstream_unavailable" in last


def test_sdk_stream_raises_when_upstream_dies_mid_stream(raw_upstream):
    up = raw_upstream(_die_mid_stream)
    with gateway_for(up.url) as url:
        stream = sdk(url + "/v1").chat.completions.create(model="m", messages=[], stream=True)
        with pytest.raises(openai.APIError) as caught:  # the error chunk, raised by the SDK
            for _ in stream:
                pass
    assert caught.value.code == "upstream_unavailable"


def test_silence_mid_stream_ends_the_client_stream_with_a_timeout_error(make_gateway, upstream):
    url = make_gateway(upstream={"timeout_s": 0.3})  # the idle timeout too, when unset
    upstream.queue(Reply(content="a" * 20, chunk_delay=1.0))
    with httpx.stream(
        "POST", url + "/v1/chat/completions", json={"model": "m", "messages": [], "stream": True}, timeout=10
    ) as response:
        assert response.status_code == 200
        body = response.read()
    assert body.endswith(b"data: [DONE]\n\n") and b'"code":"upstream_timeout"' in body


# ---- the upstream's own errors pass through as they are -------------------------------------------

UPSTREAM_ERRORS = {
    400: (openai.BadRequestError, {}),
    401: (openai.AuthenticationError, {}),
    403: (openai.PermissionDeniedError, {}),
    404: (openai.NotFoundError, {}),
    422: (openai.UnprocessableEntityError, {}),
    429: (openai.RateLimitError, {"retry-after": "20"}),
    500: (openai.InternalServerError, {}),
    503: (openai.InternalServerError, {"retry-after": "5"}),
}


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("status", UPSTREAM_ERRORS)
def test_upstream_errors_pass_through(gateway, upstream, status, stream):
    error_class, headers = UPSTREAM_ERRORS[status]
    body = orjson.dumps(
        {"error": {"message": f"upstream says {status}", "type": "t", "param": None, "code": f"c{status}"}}
    )
    upstream.queue(Reply(status=status, body=body, headers=headers), Reply(status=status, body=body, headers=headers))

    raw = httpx.post(gateway + "/v1/chat/completions", json={"model": "m", "messages": [], "stream": stream})
    assert raw.status_code == status
    assert raw.content == body
    for name, value in headers.items():
        assert raw.headers[name] == value

    with pytest.raises(error_class) as caught:
        sdk(gateway + "/v1").chat.completions.create(model="m", messages=[], stream=stream)
    assert caught.value.status_code == status
    assert caught.value.body["message"] == f"upstream says {status}"
    for name, value in headers.items():
        assert caught.value.response.headers[name] == value


def test_upstream_error_on_passthrough_route(gateway, upstream):
    upstream.passthrough_script.append(Reply(status=404, body=b'{"error":{"message":"No such model"}}'))
    with pytest.raises(openai.NotFoundError):
        sdk(gateway + "/v1").models.retrieve("nope")
    assert upstream.last["path"] == "/v1/models/nope"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),  # big ints, Infinity too
    )
)
def test_any_body_gets_an_answer_never_a_500(gateway, body):
    response = httpx.post(gateway + "/v1/chat/completions", content=body)
    assert response.status_code in (200, 400)
    if response.status_code == 400:
        error_shape(response)
