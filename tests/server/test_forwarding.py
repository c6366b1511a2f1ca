"""Fidelity: with nothing to change, the gateway is invisible on the wire.

The upstream must receive the client's exact body bytes, and the client must get the upstream's
status, body and end-to-end headers back, with only hop-by-hop headers (RFC 9110 7.6.1) dropped
in both directions.
"""

from __future__ import annotations

import httpx
import pytest
from support.upstream import Reply

from .helpers import API_KEY, async_sdk, sdk

CHAT_PATHS = ["/v1/chat/completions", "/chat/completions"]

# Bodies a re-serialising proxy would change: formatting, key order, escapes, duplicates.
BODIES = {
    "odd whitespace": b'{ "model" :"m",\n\t"messages":[ {"role":"user","content":"hi"} ]   }\n',
    "key order, raw unicode": (
        '{"messages":[{"content":"h\u00e9llo \U0001f30d \u2028 \u65e5\u672c","role":"user"}],'
        '"temperature":0.50,"model":"m"}'
    ).encode(),
    "escaped unicode": b'{"model":"m","messages":[{"role":"user","content":"\\u00e9\\ud83c\\udf0d \\/ \\""}]}',
    "duplicate key": b'{"model":"first","model":"m","messages":[]}',
    "number spellings": b'{"model":"m","messages":[],"temperature":1.0E+0,"top_p":1e-1,"seed":18446744073709551616}',
    "stream": b'{"stream":true,"model":"m","messages":[{"role":"user","content":"x"}]}',
    "tool history": (
        b'{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1",'
        b'"type":"function","function":{"name":"read","arguments":"{\\"path\\": \\"a.py\\"}"}}]},'
        b'{"role":"tool","tool_call_id":"c1","content":"print(1)\\n"}]}'
    ),
}


@pytest.mark.parametrize("path", CHAT_PATHS)
@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_upstream_receives_exact_body_bytes(any_gateway, upstream, path, body):
    response = httpx.post(any_gateway + path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    assert upstream.last["raw"] == body
    assert upstream.last["path"] == "/v1/chat/completions"
    assert int(upstream.last["headers"]["content-length"]) == len(body)


def test_chunked_upload_arrives_as_the_same_bytes(any_gateway, upstream):
    # A client streaming its request body (no content-length) is re-framed, never re-encoded.
    body = (
        b'{"model":"m","messages":['
        + b",".join(b'{"role":"user","content":"%d \xc3\xa9"}' % i for i in range(2000))
        + b"]}"
    )

    def pieces():
        for i in range(0, len(body), 4093):
            yield body[i : i + 4093]

    response = httpx.post(any_gateway + "/v1/chat/completions", content=pieces())
    assert response.status_code == 200
    assert upstream.last["raw"] == body
    assert "transfer-encoding" not in upstream.last["headers"]


def _end_to_end(response: httpx.Response) -> list[tuple[str, str]]:
    # Framing and per-hop values are recomputed by each server; Date differs between two calls.
    skip = {"date", "content-length", "transfer-encoding", "connection", "keep-alive", "x-loopguard-action"}
    return [(k.decode().lower(), v.decode()) for k, v in response.headers.raw if k.decode().lower() not in skip]


UPSTREAM_HEADERS = [
    ("x-request-id", "req_abc123"),
    ("openai-processing-ms", "321"),
    ("openai-version", "2020-10-01"),
    ("x-ratelimit-remaining-tokens", "9000"),
    ("x-repeated", "one"),
    ("x-repeated", "two"),
    ("set-cookie", "__cf_bm=a; path=/"),
    ("set-cookie", "_cfuvid=b; path=/"),
]
STATUS_REPLIES = {
    "200": Reply(body=b'{"id":"chatcmpl-1","object":"chat.completion" ,"choices":[] }'),
    "400": Reply(
        status=400,
        body=b'{"error":{"message":"bad \\u00e9","type":"invalid_request_error","param":"messages","code":null}}',
    ),
    "401": Reply(
        status=401,
        body=b'{"error":{"message":"Incorrect API key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}',
    ),
    "429": Reply(
        status=429,
        headers={"retry-after": "7", "retry-after-ms": "6500"},
        body=b'{"error":{"message":"Rate limit","type":"requests","param":null,"code":"rate_limit_exceeded"}}',
    ),
    "500": Reply(
        status=500,
        body=b'{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}',
    ),
    "503": Reply(status=503, headers={"retry-after": "30"}, body=b"upstream overloaded, not even JSON"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream-requested"])
@pytest.mark.parametrize("name", STATUS_REPLIES)
def test_status_body_and_end_to_end_headers_come_back_unchanged(any_gateway, upstream, name, stream):
    # The same scripted answer fetched directly and through the gateway must look the same.
    reply = STATUS_REPLIES[name]
    reply.raw_headers = UPSTREAM_HEADERS
    body = b'{"model":"m","messages":[],"stream":%s}' % (b"true" if stream else b"false")
    upstream.queue(reply, reply)
    direct = httpx.post(upstream.url + "/v1/chat/completions", content=body)
    relayed = httpx.post(any_gateway + "/v1/chat/completions", content=body)

    assert relayed.status_code == direct.status_code == reply.status
    assert relayed.content == direct.content == reply.body
    assert _end_to_end(relayed) == _end_to_end(direct)
    assert len(relayed.headers.get_list("date")) == 1  # the upstream's, not doubled
    if "content-length" in relayed.headers:  # a streamed 200 may be re-chunked instead
        assert relayed.headers["content-length"] == str(len(reply.body))


def test_hop_by_hop_response_headers_are_dropped(any_gateway, upstream):
    upstream.queue(
        Reply(
            content="hi",
            chunked=True,
            raw_headers=[
                ("connection", "x-hop-resp"),
                ("x-hop-resp", "must not cross"),
                ("keep-alive", "timeout=99"),
                ("proxy-authenticate", "Basic realm=up"),
                ("trailer", "x-checksum"),
                ("x-end-to-end", "kept"),
            ],
        )
    )
    response = httpx.post(any_gateway + "/v1/chat/completions", json={"model": "m", "messages": []})
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "hi"
    names = {k.decode().lower() for k, _ in response.headers.raw}
    assert not names & {"x-hop-resp", "keep-alive", "proxy-authenticate", "trailer"}
    assert "timeout=99" not in str(response.headers.raw)
    assert response.headers["x-end-to-end"] == "kept"
    # The upstream sent it chunked; the gateway read it whole and frames it itself.
    assert "transfer-encoding" not in names and response.headers["content-length"] == str(len(response.content))


def test_request_headers_forwarded_and_hop_by_hop_dropped(any_gateway, upstream):
    sent = [
        ("authorization", f"Bearer {API_KEY}"),
        ("openai-organization", "org-123"),
        ("openai-project", "proj_9"),
        ("x-stainless-lang", "python"),
        ("x-custom", "a"),
        ("x-custom", "b"),
        ("user-agent", "agent/1.0"),
        ("content-type", "application/json"),
        # hop-by-hop, including one made hop-by-hop by being named in Connection
        ("connection", "keep-alive, x-hop-req"),
        ("x-hop-req", "secret-hop"),
        ("keep-alive", "timeout=5"),
        ("te", "trailers"),
        ("proxy-authorization", "Basic cHJveHk6cHc="),
        ("proxy-connection", "keep-alive"),
    ]
    body = b'{"model":"m","messages":[]}'

    def pieces():  # chunked: the client's Transfer-Encoding must not reach the upstream either
        yield body

    response = httpx.post(any_gateway + "/v1/chat/completions", content=pieces(), headers=sent)
    assert response.status_code == 200
    got = [(k.decode().lower(), v.decode()) for k, v in upstream.last["raw_headers"]]
    names = {k for k, _ in got}
    for name, value in sent[:8]:
        assert (name, value) in got, name
    assert [v for k, v in got if k == "x-custom"] == ["a", "b"]  # repeats kept, in order
    assert not names & {"x-hop-req", "keep-alive", "te", "proxy-authorization", "proxy-connection", "transfer-encoding"}
    assert dict(got)["host"] == upstream.url.removeprefix("http://")
    assert dict(got)["content-length"] == str(len(body))
    assert upstream.last["raw"] == body


AUTH_CASES = {
    # (config overrides, client headers, expected upstream headers, headers that must be absent)
    "client key forwarded": ({}, {"authorization": "Bearer sk-client"}, {"authorization": "Bearer sk-client"}, set()),
    "server key replaces client's": (
        {"upstream": {"api_key": "sk-server"}},
        {"authorization": "Bearer sk-client", "api-key": "sk-client"},
        {"authorization": "Bearer sk-server"},
        {"api-key"},
    ),
    "server key when client has none": (
        {"upstream": {"api_key": "sk-server"}},
        {},
        {"authorization": "Bearer sk-server"},
        set(),
    ),
    "configured headers added, replacing the client's": (
        {"upstream": {"headers": {"OpenAI-Organization": "org-server", "X-Extra": "1"}}},
        {"openai-organization": "org-client", "authorization": "Bearer sk-client"},
        {"openai-organization": "org-server", "x-extra": "1", "authorization": "Bearer sk-client"},
        set(),
    ),
}


@pytest.mark.parametrize("case", AUTH_CASES)
def test_authorization_and_configured_headers(make_gateway_on, upstream, case):
    overrides, client_headers, expected, absent = AUTH_CASES[case]
    url = make_gateway_on(**overrides)
    response = httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": []}, headers=client_headers)
    assert response.status_code == 200
    got = [(k.decode().lower(), v.decode()) for k, v in upstream.last["raw_headers"]]
    for name, value in expected.items():
        assert [v for k, v in got if k == name] == [value], name  # exactly once, the right value
    assert not {k for k, _ in got} & absent


def test_same_headers_on_passthrough_routes(gateway, upstream):
    # The header rules are the gateway's, not the chat route's.
    httpx.get(
        gateway + "/v1/models",
        headers={"authorization": "Bearer sk-x", "connection": "x-hop", "x-hop": "1", "openai-organization": "org-1"},
    )
    got = upstream.last["headers"]
    assert got["authorization"] == "Bearer sk-x" and got["openai-organization"] == "org-1"
    assert "x-hop" not in got


@pytest.mark.parametrize("path", CHAT_PATHS)
@pytest.mark.parametrize("stream", [False, True])
def test_action_header_is_pass(gateway, path, stream):
    with httpx.stream("POST", gateway + path, json={"model": "m", "messages": [], "stream": stream}) as response:
        response.read()
    assert response.status_code == 200
    assert response.headers["x-loopguard-action"] == "pass"


# ---- the official SDK, sync and async ----------------------------------------------------------


def test_sdk_sync_unary(gateway, upstream):
    upstream.queue(Reply(content="hello from upstream", tool_calls=[("read_file", '{"path": "a.py"}')]))
    raw = sdk(gateway + "/v1").chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    completion = raw.parse()
    assert raw.headers["x-loopguard-action"] == "pass"
    message = completion.choices[0].message
    assert message.content == "hello from upstream"
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [("read_file", '{"path": "a.py"}')]
    assert upstream.last["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert upstream.last["json"]["messages"] == [{"role": "user", "content": "hi"}]


async def test_sdk_async_unary(gateway, upstream):
    upstream.queue(Reply(content="async hello"))
    async with async_sdk(gateway + "/v1") as client:
        completion = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "async hello"
    assert completion.usage.total_tokens == 15


def test_sdk_sync_stream(gateway, upstream):
    upstream.queue(Reply(content="streamed through the gateway"))
    stream = sdk(gateway + "/v1").chat.completions.create(model="m", messages=[], stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "streamed through the gateway"
    assert upstream.last["json"]["stream"] is True


async def test_sdk_async_stream(gateway, upstream):
    upstream.queue(Reply(content="async stream"))
    async with async_sdk(gateway + "/v1") as client:
        stream = await client.chat.completions.create(model="m", messages=[], stream=True)
        text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
    assert text == "async stream"
