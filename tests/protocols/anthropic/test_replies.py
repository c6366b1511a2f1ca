"""Replies: proposed calls of a ``message``, trimmed calls, and the replies and errors the gateway
writes, each read by the real anthropic SDK from a real server on loopback."""

from __future__ import annotations

import anthropic
import orjson
import pytest
from anthropic.types import Message
from anthropic.types.shared import ErrorResponse
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from support.servers import serve

from gateway.protocols.anthropic.protocol import build as anthropic_adapter
from gateway.protocols.anthropic.replies import error_body, error_event
from gateway.protocols.base import Answer
from gateway.trace.model import ToolCall

from .streams import end, refuse, run, start, stream, text, tool

A = anthropic_adapter()
PAYLOAD = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]}
REPLY = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "thinking", "thinking": "Read both.", "signature": "EqQBCgIYAh"},
        {"type": "text", "text": "Reading both files."},
        {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_01B", "name": "read_file", "input": {"path": "b.py"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 2095,
        "output_tokens": 503,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    },
}


def test_proposed_calls_in_order():
    assert A.replies.proposed_calls(REPLY) == [
        (
            ToolCall("toolu_01A", "read_file", '{"path":"a.py"}'),
            ToolCall("toolu_01B", "read_file", '{"path":"b.py"}'),
        )
    ]
    assert A.replies.answer(REPLY) == Answer(True, "Reading both files.")


@pytest.mark.parametrize(
    "count, ids, stop",
    [(2, ["toolu_01A", "toolu_01B"], "tool_use"), (1, ["toolu_01A"], "tool_use"), (0, [], "end_turn")],
)
def test_keep_calls(count, ids, stop):
    kept = Message.model_validate(A.replies.keep_calls(REPLY, [count]))
    assert [b.id for b in kept.content if b.type == "tool_use"] == ids
    assert [b.type for b in kept.content if b.type != "tool_use"] == ["thinking", "text"]
    assert kept.stop_reason == stop
    assert REPLY["stop_reason"] == "tool_use" and len(REPLY["content"]) == 4  # not mutated


@pytest.mark.parametrize("reply", [None, {}, {"content": None}, {"content": [None, 1, {"type": "tool_use"}]}])
def test_odd_replies_propose_nothing(reply):
    assert A.replies.proposed_calls(reply) == [()]
    assert A.replies.keep_calls(reply, [0]) == reply


@pytest.fixture(scope="module")
def canned():
    """A loopback server answering /v1/messages with whatever the test put in ``box``."""
    box: dict = {}

    async def messages(request):
        return Response(box["body"], box.get("status", 200), media_type=box.get("type", "application/json"))

    with serve(Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])) as url:
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)
        yield box, client


def test_the_termination_message_is_read_by_the_sdk(canned):
    box, client = canned
    box.update(
        body=orjson.dumps(A.authored.termination_reply("[LoopGuard] Stopped.", PAYLOAD)),
        status=200,
        type="application/json",
    )
    message = client.messages.create(**PAYLOAD)
    assert message.content[0].text == "[LoopGuard] Stopped." and message.stop_reason == "end_turn"
    assert message.model == "claude-sonnet-4-6" and message.role == "assistant"
    Message.model_validate(A.authored.termination_reply("x", PAYLOAD))  # strict: every field as typed


def test_the_termination_stream_is_read_by_the_sdk(canned):
    box, client = canned
    box.update(
        body=b"".join(A.authored.termination_stream("[LoopGuard] Stopped.", PAYLOAD)),
        status=200,
        type="text/event-stream",
    )
    with client.messages.stream(**PAYLOAD) as streamed:
        texts = list(streamed.text_stream)
        final = streamed.get_final_message()
    assert texts == ["[LoopGuard] Stopped."]
    assert final.stop_reason == "end_turn" and [b.text for b in final.content] == ["[LoopGuard] Stopped."]


def test_a_filtered_stream_with_a_continuation_is_read_by_the_sdk(canned):
    box, client = canned
    out, filt = run(
        stream(start(), text(0, "Reading."), tool(1, "toolu_01", "read_file", '{"path": "a"}'), end()),
        refuse("read_file"),
    )
    filt.begin_continuation()
    out += b"".join(filt.feed(stream(start("msg_02"), tool(0, "toolu_02", "grep", '{"pattern": "x"}'), end())))
    out += b"".join(filt.end_upstream()) + b"".join(filt.final())
    box.update(body=out, status=200, type="text/event-stream")
    with client.messages.stream(**PAYLOAD) as streamed:
        final = streamed.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[1].input == {"pattern": "x"} and final.stop_reason == "tool_use"


@pytest.mark.parametrize(
    "status, type_, kind, exc",
    [
        (400, "invalid_request_error", "invalid_request_error", anthropic.BadRequestError),
        (409, "loop_detected", "invalid_request_error", anthropic.ConflictError),
        (413, "invalid_request_error", "invalid_request_error", anthropic.APIStatusError),
        (429, "loop_detected", "rate_limit_error", anthropic.RateLimitError),
        (502, "upstream_error", "api_error", anthropic.InternalServerError),
        (529, "overloaded_error", "overloaded_error", anthropic.APIStatusError),
    ],
)
def test_errors_in_anthropics_shape(canned, status, type_, kind, exc):
    box, client = canned
    body = error_body("[LoopGuard] stopped", type_, None, status=status)
    box.update(body=orjson.dumps(body), status=status, type="application/json")
    with pytest.raises(exc) as raised:
        client.messages.create(**PAYLOAD)
    assert raised.value.status_code == status
    assert raised.value.body == {"type": "error", "error": {"type": kind, "message": "[LoopGuard] stopped"}}
    ErrorResponse.model_validate(body)


@pytest.mark.parametrize(
    "type_, code, kind",
    [
        ("loop_detected", "loop_detected", "invalid_request_error"),
        ("invalid_request_error", "request_too_large", "invalid_request_error"),
        ("upstream_error", "upstream_timeout", "timeout_error"),
        ("upstream_error", "upstream_unavailable", "api_error"),
        ("something_new", None, "invalid_request_error"),
    ],
)
def test_the_gateways_own_error_names_in_anthropics_words(type_, code, kind):
    """The pipeline names its errors by (type, code), without the status."""
    assert A.authored.error_body("m", type_, code) == {"type": "error", "error": {"type": kind, "message": "m"}}


def test_an_error_event_ends_the_sdks_stream_with_an_exception(canned):
    box, client = canned
    body = A.authored.error_body("[LoopGuard] stopped", "loop_detected", "loop_detected")
    box.update(body=stream(start(), text(0, "Part")) + error_event(body), status=200, type="text/event-stream")
    with pytest.raises(anthropic.APIStatusError) as raised:
        with client.messages.stream(**PAYLOAD) as streamed:
            streamed.get_final_message()
    assert raised.value.body["error"] == {"type": "invalid_request_error", "message": "[LoopGuard] stopped"}
