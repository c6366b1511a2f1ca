"""End to end on Bedrock's Converse API: boto3's ``bedrock-runtime`` agents (``converse`` and
``converse_stream``), a real gateway and a real scripted Bedrock runtime, all on loopback."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import orjson
import pytest
from botocore.eventstream import ParserError
from botocore.exceptions import ClientError, EventStreamError
from botocore.parsers import create_parser
from support.converse_gateway import run_agent, start_converse
from support.converse_upstream import CROSS_REGION, MODEL, PROFILE, Said, healthy, stubborn
from support.policies import ladder_policy

FINAL = "I could not finish: the file never changed."


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_agent_is_warned_refused_then_ended_with_the_models_answer(start_converse, stream):
    upstream, client, _ = start_converse(stubborn(final=FINAL))

    answer, executions = run_agent(client, stream)

    assert answer == FINAL and executions == 3 <= 8
    warned, reasked, closed = (upstream.requests[i]["json"] for i in (3, 4, 5))
    assert "[LoopGuard]" in warned["system"][-1]["text"]  # the default placement
    refused_call, observation = reasked["messages"][-2:]
    assert refused_call["content"][0]["toolUse"]["name"] == "read_file"
    result = observation["content"][0]["toolResult"]
    assert result["status"] == "error" and "rejected" in result["content"][0]["text"]
    assert "toolConfig" not in closed and len(upstream.requests) == 6


@pytest.mark.parametrize("stream", [False, True])
def test_a_healthy_agent_is_relayed_untouched(start_converse, stream):
    upstream, client, _ = start_converse(healthy(steps=2))

    answer, executions = run_agent(client, stream)

    assert answer == "All files summarized: a short, complete answer." and executions == 2
    assert len(upstream.requests) == 3 and all(b"LoopGuard" not in r["raw"] for r in upstream.requests)
    assert all(r["path"] == f"/model/{MODEL}/converse{'-stream' if stream else ''}" for r in upstream.requests)


@pytest.mark.parametrize("stream", [False, True])
def test_a_cross_region_profile_id_is_the_model_and_reaches_the_cloud_signed(start_converse, stream):
    upstream, client, _ = start_converse(healthy(steps=0))
    assert run_agent(client, stream, model=CROSS_REGION)[0].startswith("All files")
    assert upstream.last["raw_path"].split("/")[2] in (CROSS_REGION, quote(CROSS_REGION, safe=""))


@pytest.mark.parametrize("stream", [False, True])
def test_an_inference_profile_arn_reaches_the_cloud_as_one_signed_path_segment(start_converse, stream):
    """An ARN's "/" comes as %2F (boto3 encodes every ``:`` and ``/`` of a model id): the gateway
    reads the model decoded and sends the path exactly as boto3 spelt it, which is what AWS
    routes on and what the scripted cloud checks the signature over."""
    upstream, client, _ = start_converse(healthy(steps=0))
    assert run_agent(client, stream, model=PROFILE)[0].startswith("All files")
    assert upstream.last["raw_path"].split("/")[2] == quote(PROFILE, safe="")


def converse_error(client, response: httpx.Response) -> dict:
    """What botocore makes of an error answer to ``Converse`` (its code picks the exception class)."""
    parser = create_parser("rest-json")
    operation = client.meta.service_model.operation_model("Converse")
    answer = {"status_code": response.status_code, "headers": dict(response.headers), "body": response.content}
    return parser.parse(answer, operation.output_shape)["Error"]


BODY = {
    "messages": [{"role": "user", "content": [{"text": "go"}]}],
    "toolConfig": {"tools": [{"toolSpec": {"name": "read_file", "inputSchema": {"json": {"type": "object"}}}}]},
}


@pytest.mark.parametrize("stream", [False, True])
def test_a_healthy_reply_goes_out_byte_for_byte_and_its_request_reaches_the_cloud_so(start_converse, stream):
    upstream, _, gateway = start_converse(healthy(steps=2))
    body = orjson.dumps(BODY)
    path = f"/bedrock/model/{MODEL}/converse" + ("-stream" if stream else "")

    answer = httpx.post(gateway + path, content=body, headers={"content-type": "application/json"})

    assert answer.status_code == 200 and answer.content == upstream.sent[-1]
    assert upstream.last["raw"] == body and upstream.last["path"] == path.removeprefix("/bedrock")


@pytest.mark.parametrize("stream", [False, True])
def test_terminate_in_error_mode_raises_botocores_validation_error(start_converse, stream):
    policy = ladder_policy("interventions:\n  terminate: {mode: error}\n")
    upstream, client, _ = start_converse(stubborn(final=FINAL), policy)
    expected = EventStreamError if stream else client.exceptions.ValidationException
    with pytest.raises(expected) as caught:
        run_agent(client, stream)
    assert caught.value.response["Error"]["Code"] in ("ValidationException", "validationException")
    assert "loop" in caught.value.response["Error"]["Message"].lower()
    assert len(upstream.requests) <= 5  # no tools-closed answer asked
    if not stream:  # botocore's error class comes from the header, as for Bedrock's own errors
        headers = caught.value.response["ResponseMetadata"]["HTTPHeaders"]
        assert headers["x-amzn-errortype"] == "ValidationException"


@pytest.mark.parametrize("stream", [False, True])
def test_terminate_in_reply_mode_ends_with_the_template(start_converse, stream):
    policy = ladder_policy("interventions:\n  terminate: {mode: reply}\n")
    upstream, client, _ = start_converse(stubborn(final=FINAL), policy)
    answer, executions = run_agent(client, stream)
    assert executions == 3 and "read_file" in answer and answer != FINAL
    assert all("toolConfig" in r["json"] for r in upstream.requests)  # the template: no answer asked


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[]", b'{"messages": "no list"}'],
)
def test_a_malformed_body_gets_botocores_validation_error(start_converse, body):
    upstream, client, gateway = start_converse(healthy())
    answer = httpx.post(gateway + f"/bedrock/model/{MODEL}/converse", content=body)
    assert answer.status_code != 500
    if answer.status_code == 400 and upstream.requests == []:  # the gateway's own refusal
        assert answer.json()["__type"] == "ValidationException" and answer.json()["message"]
        assert answer.headers["x-amzn-errortype"] == "ValidationException"
    assert converse_error(client, answer)["Code"] in ("ValidationException", "SerializationException")


def test_an_unknown_model_id_gets_the_clouds_validation_error(start_converse):
    _, client, _ = start_converse(healthy())
    with pytest.raises(client.exceptions.ValidationException, match="model identifier"):
        run_agent(client, False, model="anthropic.claude-nonexistent-v9:0")
    with pytest.raises(client.exceptions.ValidationException, match="model identifier"):
        run_agent(client, True, model="anthropic.claude-nonexistent-v9:0")


@pytest.mark.parametrize(
    "content",
    [
        [{"toolUse": {"toolUseId": "t1", "name": "read_file", "input": "not an object"}}],
        [{"toolUse": {"toolUseId": "t1", "input": {}}}],
        [{"toolUse": "not a block"}],
        [{"toolUse": {"toolUseId": "t1", "name": "read_file", "input": {"path": "a.txt"}}}],
    ],
)
def test_broken_tool_use_blocks_are_judged_without_a_500(start_converse, content):
    """Every request repeats the same broken call: whatever the gateway makes of it, the answer
    is the cloud's or the gateway's own in Bedrock's shape."""
    _, client, gateway = start_converse(healthy(steps=9))
    messages = [{"role": "user", "content": [{"text": "go"}]}]
    for _ in range(5):
        messages += [
            {"role": "assistant", "content": content},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "same"}]}}]},
        ]
    body = {**BODY, "messages": messages}
    answer = httpx.post(gateway + f"/bedrock/model/{MODEL}/converse", content=orjson.dumps(body))
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code != 200:
        assert converse_error(client, answer)["Code"] == "ValidationException"


def test_malformed_frames_from_the_cloud_reach_botocore_as_a_stream_error(start_converse):
    good = b"".join(Said(text="hello").events([]))
    broken = bytearray(good)
    broken[len(good) // 2] ^= 0xFF  # a flipped byte: its frame's checksum fails

    _, client, _ = start_converse(lambda body: Said(frames=bytes(broken)))

    with pytest.raises((ParserError, EventStreamError)):
        run_agent(client, True)


def test_a_stream_cut_before_its_end_ends_with_an_exception_botocore_raises(start_converse):
    frames = Said(text="hello there", calls=[("read_file", {"path": "a.txt"})]).events(["t1"])
    _, client, _ = start_converse(lambda body: Said(frames=b"".join(frames[:4])))
    with pytest.raises(EventStreamError) as caught:
        run_agent(client, True)
    assert caught.value.response["Error"]["Code"] == "internalServerException"


def test_a_cloud_error_keeps_its_class(start_converse):
    _, client, _ = start_converse(lambda body: Said(error=(429, "ThrottlingException")))
    with pytest.raises(client.exceptions.ThrottlingException):
        run_agent(client, False)


def test_a_bedrock_api_key_of_the_gateways_replaces_the_clients_signature(start_converse):
    upstream, client, _ = start_converse(healthy(steps=0), signed=False, bedrock_api_key="bedrock-key")
    run_agent(client, False)
    assert upstream.last["headers"]["authorization"] == "Bearer bedrock-key"


def test_without_gateway_credentials_a_changed_body_is_never_sent_under_the_clients_signature(start_converse):
    """The client signed its own bytes; the warned request is another body: refused, in
    Bedrock's shape, and never reaches the cloud."""
    upstream, client, _ = start_converse(stubborn(), signed=False)
    with pytest.raises(ClientError) as caught:
        run_agent(client, False)
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 502
    assert caught.value.response["Error"]["Code"] == "AccessDeniedException"
    assert "credentials" in caught.value.response["Error"]["Message"]
    assert len(upstream.requests) == 3  # the three untouched requests went as signed


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize("model", [MODEL, PROFILE])
def test_the_signature_holds_over_the_path_each_transport_sends(start_converse, transport, model):
    """boto3 sends a model id's ":" as %3A and an ARN's "/" as %2F; whichever HTTP client the
    gateway sends with, the cloud checks the gateway's signature over the path it received."""
    upstream, client, _ = start_converse(stubborn(final=FINAL), transport=transport)
    assert run_agent(client, True, model=model) == (FINAL, 3)
    assert len(upstream.requests) == 6  # every one accepted: signed over what arrived


def chatty(body: dict) -> Said:
    """Loops, saying so before each call; with tools closed, its final answer."""
    if "toolConfig" not in body:
        return Said(text=FINAL)
    return Said(text="Let me read a.txt again.", calls=[("read_file", {"path": "a.txt"})])


def test_a_streamed_stop_reads_exactly_like_the_non_streamed_one(start_converse):
    """From the warned step on, a round's words are held until its call is judged: the refused
    round's words never reach the streaming client either."""
    _, unary_client, _ = start_converse(chatty)
    _, stream_client, _ = start_converse(chatty)
    assert run_agent(stream_client, True) == run_agent(unary_client, False) == (FINAL, 3)
