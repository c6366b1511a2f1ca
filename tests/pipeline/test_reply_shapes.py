"""A guarded request is judged whatever shape its upstream answers in: a stream request answered
with one JSON body, a unary one answered with events, a re-ask that changes shape. The agent
has run the same call three times (warned); the 4th identical call never reaches it."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest
from support.loop_bodies import ARGS
from support.policies import ladder_policy
from support.servers import serve

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import build_app

from .shapes import JSON, MISLABELLED, PROTOCOLS, SSE, UNLABELLED, Protocol, ShapedUpstream, calls_in


@pytest.fixture
def shaped(tmp_path):
    """Start (upstream answering in ``shape(n)``, gateway) for one test; returns (upstream, url)."""
    contexts = []

    def start(shape):
        upstream = ShapedUpstream(shape)
        contexts.append(ctx := serve(upstream.app))
        upstream_url = ctx.__enter__()
        policy = tmp_path / "policy.yaml"
        policy.write_text(ladder_policy())
        config = Config.model_validate(
            {"upstream": {"base_url": upstream_url + "/v1", "anthropic_base_url": upstream_url}}
        )
        contexts.append(ctx := serve(build_app(config, policies=PolicyHolder(policy))))
        return upstream, ctx.__enter__()

    yield start
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)


def post(url: str, protocol: Protocol, stream: bool) -> httpx.Response:
    body = {**protocol.request(3), "stream": stream}
    headers = {"authorization": "Bearer sk-test", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
    return httpx.post(url + protocol.path, content=orjson.dumps(body), headers=headers, timeout=20)


def reasked(upstream: ShapedUpstream) -> bool:
    """The model was asked again, shown its refused call."""
    return len(upstream.requests) >= 2 and "rejected" in orjson.dumps(upstream.requests[1]["json"]).decode()


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_a_stream_request_answered_with_json_is_judged_as_a_unary_reply(shaped, protocol):
    """Judged whole; the run ended, its final reply is written as the stream the request asked
    for (the client's stream reader reads nothing else), the model's own answer in it."""
    upstream, url = shaped(lambda n: JSON)
    response = post(url, protocol, stream=True)
    assert response.status_code == 200 and response.headers["x-loopguard-action"] == "terminate"
    assert response.headers["content-type"].startswith(SSE)
    assert calls_in(response.content) == 0  # never relayed with its call
    assert reasked(upstream)


@pytest.mark.parametrize("label", UNLABELLED)
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_a_stream_request_answered_with_events_of_no_event_type_is_judged_as_a_stream(shaped, protocol, label):
    """Some upstreams stream events as ``text/plain`` or with no content type: a stream request's
    reply that does not say it is JSON is read as the events it asked for, and judged."""
    upstream, url = shaped(lambda n: label)
    response = post(url, protocol, stream=True)
    assert response.status_code == 200
    assert calls_in(response.content) == 0
    assert reasked(upstream)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_a_unary_request_answered_with_events_is_judged_as_a_stream(shaped, protocol):
    """Before, a gateway 502 (the events read as JSON); now the stream's calls are held and judged."""
    upstream, url = shaped(lambda n: SSE)
    response = post(url, protocol, stream=False)
    assert response.status_code == 200 and response.headers["content-type"].startswith(SSE)
    assert calls_in(response.content) == 0
    assert reasked(upstream)


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_a_reask_answered_in_another_shape_ends_the_stream_with_an_error(shaped, protocol):
    """The first answer streams; the re-ask comes back as JSON, which the open client stream
    cannot carry judged: the stream ends with the protocol's error, the call never sent."""
    upstream, url = shaped(lambda n: SSE if n == 0 else JSON)
    response = post(url, protocol, stream=True)
    assert response.status_code == 200 and calls_in(response.content) == 0
    assert b"not an event stream" in response.content
    assert reasked(upstream)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_one_json_body_labelled_as_events_is_never_relayed(shaped, protocol, stream):
    """Read as events, a JSON body holds none: its call would pass through the stream filter
    as unread bytes. Its first bytes give it away, and the stream ends with the error."""
    _, url = shaped(lambda n: MISLABELLED)
    response = post(url, protocol, stream=stream)
    assert response.status_code == 200 and b"not an event stream" in response.content
    assert b"read_file" not in response.content


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_a_final_answer_in_json_never_enters_a_stream(shaped, protocol):
    """The run ends at the request (five identical calls run): the model is asked for its own
    answer with tools closed, and answers one JSON body that still calls the tool: no event
    stream, so none of it enters the client stream, which gets the template instead."""
    upstream, url = shaped(lambda n: JSON)
    body = {**protocol.request(5), "stream": True}
    headers = {"authorization": "Bearer sk-test", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}
    response = httpx.post(url + protocol.path, content=orjson.dumps(body), headers=headers, timeout=20)
    assert response.status_code == 200 and response.headers["content-type"].startswith(SSE)
    assert response.headers["x-loopguard-terminate"] == "reply" and len(upstream.requests) == 1
    assert calls_in(response.content) == 0 and b'"read_file"' not in response.content


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_a_unary_reask_answered_with_events_is_a_clear_error_not_the_call(shaped, protocol):
    upstream, url = shaped(lambda n: JSON if n == 0 else SSE)
    response = post(url, protocol, stream=False)
    assert response.status_code == 502 and calls_in(response.content) == 0
    assert reasked(upstream)


def test_an_openai_sdk_agent_streaming_gets_json_and_still_stops_at_the_4th_call(shaped):
    """The openai SDK asks ``stream=True``; the upstream answers JSON. The agent reads each raw
    JSON reply as the completion it is (the SDK's event reader finds nothing in it) and runs
    every call it gets: three; then the run ends, in the stream its SDK reads, without a fourth."""
    _, url = shaped(lambda n: JSON)
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    ran = 0
    for _ in range(10):
        raw = client.chat.completions.with_raw_response.create(model="m", messages=messages, tools=tools, stream=True)
        if raw.headers["content-type"].startswith(SSE):
            chunks = list(raw.parse())
            assert not [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            break
        message = orjson.loads(raw.http_response.read())["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            break
        assert [c["function"]["arguments"] for c in calls] == [ARGS]
        ran += 1
        messages += [message, {"role": "tool", "tool_call_id": calls[0]["id"], "content": "same"}]
    assert ran == 3 and raw.headers["x-loopguard-action"] in ("reject", "terminate")
