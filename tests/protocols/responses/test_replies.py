"""Reading unary replies, and the replies the gateway writes, checked with the openai SDK's models."""

from __future__ import annotations

import pytest
from support.responses_wire import custom_call, function_call, message, reasoning, response

from gateway.protocols.responses.events import termination_events
from gateway.protocols.responses.replies import keep_calls, proposed_calls, reply_text, termination_reply
from gateway.trace.model import ToolCall

from .oracle import check_numbering, client_events, validate_response

READ = function_call("read_file", '{"path": "a.txt"}', "call_1")
LIST = function_call("list_dir", "{}", "call_2")
PATCH = custom_call("apply_patch", "*** Begin", "call_3")
REPLY = response([reasoning(), message("Looking."), READ, PATCH, LIST])


def test_proposed_calls_in_order():
    assert proposed_calls(REPLY) == (
        ToolCall("call_1", "read_file", '{"path": "a.txt"}'),
        ToolCall("call_3", "apply_patch", "*** Begin"),
        ToolCall("call_2", "list_dir", "{}"),
    )
    assert proposed_calls({"output": "nope"}) == () and proposed_calls(None) == ()


@pytest.mark.parametrize(("count", "kept"), [(3, ["call_1", "call_3", "call_2"]), (1, ["call_1"]), (0, [])])
def test_keep_calls_keeps_a_prefix_and_every_other_item(count, kept):
    edited = keep_calls(REPLY, count)
    validate_response(edited)
    assert [i["call_id"] for i in edited["output"] if "call_id" in i] == kept
    assert [i["type"] for i in edited["output"]][:2] == ["reasoning", "message"]
    assert len(REPLY["output"]) == 5  # not mutated


def test_reply_text_joins_the_assistant_messages():
    reply = response([message("First."), READ, message("Second.", "msg_2")])
    assert reply_text(reply) == "First.\nSecond."
    assert reply_text(response([READ])) == ""


PAYLOADS = {
    "plain": {"model": "gpt-4.1", "input": "hi"},
    "chained, with instructions and an object tool_choice": {
        "model": "gpt-4.1",
        "input": [],
        "instructions": "Be brief.",
        "previous_response_id": "resp_0",
        "tool_choice": {"type": "function", "name": "read_file"},
        "parallel_tool_calls": False,
    },
    "odd fields": {"model": 7, "instructions": ["x"], "tool_choice": "sometimes", "parallel_tool_calls": "yes"},
}


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_termination_reply_is_a_valid_completed_response(payload):
    body = termination_reply("Stopping: the same call kept failing.", payload)
    parsed = validate_response(body)
    assert parsed.status == "completed" and parsed.output_text == "Stopping: the same call kept failing."
    assert [item.type for item in parsed.output] == ["message"]
    assert reply_text(body) == "Stopping: the same call kept failing." and proposed_calls(body) == ()


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_termination_stream_is_a_valid_event_stream(payload):
    events = client_events(b"".join(termination_events("Done here.", payload)))
    check_numbering(events)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = validate_response(events[-1]["response"])
    assert final.status == "completed" and final.output_text == "Done here."
