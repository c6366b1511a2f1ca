"""Bad input on Bedrock's routes, through a real gateway to the scripted Bedrock runtime: what
AWS refuses is relayed as AWS said it, what the gateway refuses is in Bedrock's shape
(``{"message"}``, ``__type`` and ``x-amzn-ErrorType``), never a 500; and which credentials go
upstream when the gateway holds none."""

from __future__ import annotations

import anthropic
import httpx
import orjson
import pytest
from botocore.eventstream import EventStreamBuffer
from support.anthropic_upstream import Said
from support.bedrock_agents import FINAL, stubborn, tool_loop
from support.bedrock_gateway import bedrock_client, start_bedrock
from support.bedrock_upstream import API_KEY, MODEL

__all__ = ["start_bedrock"]

HI = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


def said_hi(body: dict) -> Said:
    return Said(text="hi")


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    """(status, x-amzn-ErrorType's name, the body's message)."""
    kind = response.headers.get("x-amzn-errortype", "").partition(":")[0]
    return response.status_code, kind, response.json()["message"]


def test_an_unsigned_request_gets_aws_refusal_when_the_gateway_holds_no_credentials(start_bedrock):
    _, url = start_bedrock(said_hi, credentials=False)
    answer = httpx.post(f"{url}/model/{MODEL}/invoke", json=HI)
    assert error_of(answer) == (403, "MissingAuthenticationTokenException", "Missing Authentication Token")


def test_an_unsigned_request_is_signed_by_the_gateway(start_bedrock):
    upstream, url = start_bedrock(said_hi)
    answer = httpx.post(f"{url}/model/{MODEL}/invoke", json=HI)
    assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "hi"
    assert upstream.refused == []


def test_a_clients_signature_goes_as_it_came_and_aws_judges_it(start_bedrock):
    """Without gateway credentials the client's own signature goes upstream with its own bytes.
    It covers the URL the client called (the gateway's host and ``/bedrock`` path), so AWS
    refuses it, and the client reads AWS's refusal."""
    upstream, url = start_bedrock(said_hi, credentials=False)
    with pytest.raises(anthropic.PermissionDeniedError) as refused:
        bedrock_client(url).messages.create(model=MODEL, max_tokens=5, messages=HI["messages"])
    assert refused.value.status_code == 403
    assert "signature we calculated does not match" in str(refused.value)
    assert upstream.refused == [("InvalidSignatureException", f"/model/{MODEL}/invoke")]
    assert upstream.requests[0]["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID")


def test_a_wrong_signature_is_replaced_by_the_gateways(start_bedrock):
    """With gateway credentials the client's signature never goes upstream (the gateway's
    credentials are what the cloud bills, as an operator's key elsewhere)."""
    upstream, url = start_bedrock(said_hi)
    client = bedrock_client(url, aws_access_key="AKIDWRONG", aws_secret_key="wrong")
    assert client.messages.create(model=MODEL, max_tokens=5, messages=HI["messages"]).content[0].text == "hi"
    assert "AKIDWRONG" not in upstream.requests[0]["headers"]["authorization"]
    assert upstream.refused == []


def test_a_changed_body_under_a_clients_signature_is_never_sent(start_bedrock):
    upstream, url = start_bedrock(stubborn, credentials=False)
    upstream.api_key = None
    client = bedrock_client(url)
    # The scripted cloud takes the client's signature here as valid for the gateway's URL too.
    upstream._denied = lambda request, raw, raw_path: None  # type: ignore[method-assign]
    with pytest.raises(anthropic.APIStatusError) as failed:
        tool_loop(client, stream=False)
    assert failed.value.status_code == 502
    assert failed.value.body["__type"] == "AccessDeniedException"
    assert failed.value.response.headers["x-amzn-errortype"] == "AccessDeniedException"
    assert "holds no" in failed.value.body["message"]
    assert all(b"[LoopGuard]" not in r["raw"] for r in upstream.requests)  # the warned body never went


@pytest.mark.parametrize("stream", [False, True])
def test_a_bedrock_api_key_passes_with_the_gateways_edits(start_bedrock, stream):
    upstream, url = start_bedrock(stubborn, credentials=False)
    answer, executed = tool_loop(bedrock_client(url, api_key=API_KEY), stream)
    assert (answer, executed) == (FINAL, 3)
    assert upstream.refused == []
    assert {r["headers"]["authorization"] for r in upstream.requests} == {f"Bearer {API_KEY}"}


def test_a_configured_api_key_replaces_the_clients_credentials(start_bedrock):
    upstream, url = start_bedrock(said_hi, credentials=False, bedrock_api_key=API_KEY)
    answer = httpx.post(f"{url}/model/{MODEL}/invoke", json=HI, headers={"authorization": "Bearer ABSKclient"})
    assert answer.status_code == 200
    assert upstream.requests[0]["headers"]["authorization"] == f"Bearer {API_KEY}"


def test_an_unknown_model_id_gets_the_clouds_validation_error(start_bedrock):
    _, url = start_bedrock(said_hi)
    with pytest.raises(anthropic.BadRequestError) as refused:
        bedrock_client(url).messages.create(model="anthropic.nope-v9:0", max_tokens=5, messages=HI["messages"])
    assert refused.value.response.headers["x-amzn-errortype"].startswith("ValidationException")
    assert refused.value.body == {"message": "The provided model identifier is invalid."}


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        (f"/model/{MODEL}/invoke", b"{not json", 400),
        (f"/model/{MODEL}/invoke-with-response-stream", b"[1, 2]", 400),
        ("/model/anthropic.x%2E%2E/invoke", b"{}", 400),
        ("/model/a%2F..%2Fb/invoke", b"{}", 400),
    ],
    ids=["malformed-json", "not-an-object", "encoded-dots", "slash-dot-dot"],
)
def test_what_the_gateway_refuses_is_in_bedrocks_shape(start_bedrock, path, body, status):
    upstream, url = start_bedrock(said_hi)
    answer = httpx.post(url + path, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == status
    assert answer.headers["x-amzn-errortype"] == "ValidationException"
    assert set(answer.json()) == {"message", "__type"} and answer.json()["__type"] == "ValidationException"
    assert upstream.requests == []


def test_malformed_frames_from_the_upstream_end_the_stream_with_an_exception_frame(start_bedrock):
    garbage = b"\x00\x00\x00\x30\x00\x00\x00\x05\xde\xad\xbe\xef" + b"x" * 40
    upstream, url = start_bedrock(lambda body: Said(text="hello there", raw_stream=garbage))
    with pytest.raises(anthropic.APIStatusError) as failed:
        with bedrock_client(url).messages.stream(model=MODEL, max_tokens=5, messages=HI["messages"]) as events:
            events.get_final_message()
    assert "no event-stream frame" in str(failed.value) or "reader refuses" in str(failed.value)

    raw = httpx.post(f"{url}/model/{MODEL}/invoke-with-response-stream", json=HI).content
    buffer = EventStreamBuffer()
    buffer.add_data(raw)
    messages = list(buffer)  # every frame the client got reads with botocore
    kinds = [(m.headers[":message-type"], m.headers.get(":exception-type")) for m in messages]
    assert kinds == [("event", None), ("event", None), ("exception", "internalServerException")]
    sent = upstream.sent[-1]
    relayed = sent[: sent.index(garbage)]  # the two frames before the garbage
    assert raw.startswith(relayed) and len(relayed) > 0  # the upstream's frames, as they came
    assert orjson.loads(messages[-1].payload)["message"].startswith("The upstream model provider sent a frame")


def test_other_runtime_routes_are_relayed_signed(start_bedrock):
    upstream, url = start_bedrock(said_hi)
    body = {"input": {"invokeModel": {"body": "{}"}}}
    answer = httpx.post(f"{url}/model/{MODEL}/count-tokens", json=body)
    assert answer.status_code == 200 and answer.json() == {"inputTokens": 42}
    assert upstream.refused == [] and upstream.requests[0]["raw_path"] == f"/model/{MODEL}/count-tokens"
