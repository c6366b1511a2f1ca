"""What a broken cloud answers a looping agent's 5th identical call, through a real gateway, read
by the official SDKs: the call never reaches the client, and what the client reads ends
well-formed.

- an SSE stream the cloud ends in the middle of an event: the fragment is dropped (never fused
  with the error event the gateway ends the stream with), and nothing held goes out after the
  error (Azure chat with ``AzureOpenAI``);
- a cut InvokeModel stream: no held ``content_block_start`` goes out before the exception
  frame (``AnthropicBedrock``);
- a JSON array, or any success status other than 200, to a unary request: refused or judged,
  never relayed with the call;
- ``Expect: 100-continue`` is not forwarded (the gateway has read the body).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

import anthropic
import openai
import pytest
from support.cloud_faults import FAULTS
from support.cloud_routes import HEADERS, ROUTES, cloud_gateway, looping_body
from support.looping_cloud import MARK, Answer, LoopingCloud
from support.rawhttp import send

ROUTE = {r.name: r for r in ROUTES}


@pytest.fixture
def broken(tmp_path):
    """start(fault) -> (cloud, gateway URL): the cloud's every answer broken by ``fault``."""
    cloud = LoopingCloud()
    contexts = []

    def start(fault) -> tuple[LoopingCloud, str]:
        cloud.fault = fault
        ctx = cloud_gateway(tmp_path, cloud)
        contexts.append(ctx)
        return cloud, ctx.__enter__()

    yield start
    for ctx in contexts:
        ctx.__exit__(None, None, None)


def cut_inside_the_call(answer: Answer) -> Answer:
    """The events up to the call's arguments, then half an event with no blank line after it."""
    pieces = answer.pieces
    at = next(i for i, p in enumerate(pieces) if b"arguments" in p and b'"index": 0, "function"' in p)
    return replace(answer, pieces=[*pieces[:at], pieces[at][: len(pieces[at]) // 2]])


def test_an_sse_fragment_is_dropped_never_fused_with_the_error_after_it(broken):
    _, url = broken(cut_inside_the_call)
    client = openai.AzureOpenAI(
        azure_endpoint=url, api_key="client-key", api_version="2025-04-01-preview", max_retries=0, timeout=20
    )
    body = looping_body(ROUTE["azure-deployment-chat+stream"])
    with pytest.raises(openai.APIError) as failed:
        for _ in client.chat.completions.create(
            model="gpt-4.1", messages=body["messages"], tools=body["tools"], stream=True
        ):
            pass
    assert "ended the stream before its end" in str(failed.value)
    raw = send(url, "POST", ROUTE["azure-deployment-chat+stream"].target, HEADERS, json.dumps(body).encode())
    events = raw.body.split(b"\n\n")
    assert events[-1] == b"" and events[-2] == b"data: [DONE]"
    error = json.loads(events[-3].removeprefix(b"data: "))
    assert error["error"]["code"] == "upstream_truncated"  # a whole event, nothing fused into it
    assert MARK.encode() not in raw.body
    # Every event whole (each a JSON chunk, [DONE] or a comment), the error the last chunk: the
    # events held with the cut call went with it, none after the error.
    chunks = [json.loads(e.removeprefix(b"data: ")) for e in events[:-2] if not e.startswith(b":")]
    assert "error" in chunks[-1] and all("error" not in c for c in chunks[:-1])


def test_a_cut_invoke_stream_sends_no_held_block_start_before_its_exception(broken):
    """Cut inside the call's input: the client gets the message start, then the exception frame
    boto3 and the anthropic SDK raise; the held ``content_block_start`` of the call never."""

    def cut(answer: Answer) -> Answer:
        return replace(answer, pieces=answer.pieces[:3])  # message_start, the call's start, one delta

    _, url = broken(cut)
    client = anthropic.AnthropicBedrock(
        aws_region="us-east-1", base_url=url + "/bedrock", api_key="bedrock-key", max_retries=0, timeout=20
    )
    body = looping_body(ROUTE["bedrock-invoke+stream"])
    seen = []
    with pytest.raises(anthropic.APIStatusError) as failed:
        with client.messages.stream(
            model="anthropic.claude-3-haiku-20240307-v1:0",
            max_tokens=64,
            messages=body["messages"],
            tools=body["tools"],
        ) as events:
            seen = [event.type for event in events]
    assert "ended the stream before its end" in str(failed.value)
    assert "content_block_start" not in seen


@pytest.mark.parametrize(
    "name",
    [
        "openai-chat",
        "anthropic",
        "bedrock-converse",
        "bedrock-invoke",
        "vertex-anthropic",
        "azure-v1-chat",
        "bedrock-openai-responses",
    ],
)
def test_a_json_array_to_a_unary_request_is_refused_not_relayed(broken, name):
    _, url = broken(lambda answer: FAULTS["json-array"][1](answer, random.Random(0)))
    answer = send(url, "POST", ROUTE[name].target, HEADERS, json.dumps(looping_body(ROUTE[name])).encode())
    assert answer.status == 502 and b"not its protocol's reply" in answer.body
    assert MARK.encode() not in answer.body


@pytest.mark.parametrize("status", [201, 203, 206])
@pytest.mark.parametrize("name", ["openai-chat", "bedrock-converse", "vertex-gemini", "azure-v1-chat+stream"])
def test_any_success_status_is_judged_like_a_200(broken, name, status):
    """SDKs read any 2xx as the answer: one with the 5th call is judged, the run ended."""
    _, url = broken(lambda answer: replace(answer, status=status))
    answer = send(url, "POST", ROUTE[name].target, HEADERS, json.dumps(looping_body(ROUTE[name])).encode())
    assert answer.headers["x-loopguard-action"] in ("reject", "terminate") and MARK.encode() not in answer.body


def test_expect_is_not_forwarded(broken):
    cloud, url = broken(None)
    route = ROUTE["vertex-gemini"]
    answer = send(
        url, "POST", route.target, [*HEADERS, ("Expect", "100-continue")], json.dumps(looping_body(route)).encode()
    )
    assert answer.status == 200 and cloud.model_calls
    assert all("expect" not in seen.headers for seen in cloud.seen)
