"""The Converse adapter: a request read into the neutral conversation, every edit leaving a body
Bedrock accepts (the scripted runtime's own checks), and the gateway's own replies and errors
read back by botocore."""

from __future__ import annotations

import orjson
import pytest
from support.converse_frames import converse_reply, stream_events
from support.converse_upstream import refusal

from gateway.protocols import registry
from gateway.protocols.converse.protocol import ADAPTER as CONVERSE
from gateway.trace.model import ToolCall

USE = {"toolUse": {"toolUseId": "t1", "name": "read_file", "input": {"path": "a.txt"}}}
RESULT = {"toolResult": {"toolUseId": "t1", "content": [{"text": "same"}, {"json": {"n": 1}}]}}
TOOLS = {"tools": [{"toolSpec": {"name": "read_file", "inputSchema": {"json": {"type": "object"}}}}]}
PAYLOAD = {
    "system": [{"text": "Be brief."}],
    "messages": [
        {"role": "user", "content": [{"text": "go"}]},
        {"role": "assistant", "content": [{"text": "Reading."}, USE]},
        {"role": "user", "content": [RESULT]},
    ],
    "toolConfig": TOOLS,
}
MESSAGES = PAYLOAD["messages"]


def test_a_request_reads_as_turns_with_its_calls_results_and_tools():
    conversation = CONVERSE.requests.conversation(PAYLOAD, MESSAGES)
    system, user, assistant, tool = conversation.turns
    assert (system.index, system.role, system.text) == (-1, "system", "Be brief.")
    assert user.text == "go" and assistant.text == "Reading."
    assert assistant.tool_calls == (ToolCall("t1", "read_file", '{"path":"a.txt"}'),)
    assert (tool.role, tool.tool_call_id, tool.text, tool.index) == ("tool", "t1", 'same\n{"n":1}', 2)
    assert conversation.tools == frozenset({"read_file"})


@pytest.mark.parametrize(
    "path, model, streams",
    [
        (
            "/bedrock/model/anthropic.claude-3-haiku-20240307-v1:0/converse",
            "anthropic.claude-3-haiku-20240307-v1:0",
            False,
        ),
        ("/bedrock/model/us.amazon.nova-pro-v1:0/converse-stream", "us.amazon.nova-pro-v1:0", True),
    ],
)
def test_the_path_binds_the_model_and_the_stream(path, model, streams):
    adapter = CONVERSE.at({"path": path})
    assert adapter is not None
    assert adapter.requests.model({}) == model and adapter.requests.stream({}) is streams
    assert registry.guarded_route(path) is not None and registry.guarded_route(path)[1].name == "converse"


def valid(messages: list, payload: dict = PAYLOAD) -> dict:
    body = CONVERSE.requests.with_items(payload, messages)
    assert refusal(orjson.loads(orjson.dumps(body))) is None, body
    return body


@pytest.mark.parametrize("placement", ["system", "user", "tool_result"])
def test_a_warning_leaves_a_valid_request_where_the_model_reads_it(placement):
    body = valid(CONVERSE.edits.add_anchor(MESSAGES, "[LoopGuard] note", placement))
    if placement == "system":
        assert body["system"][-1] == {"text": "[LoopGuard] note"} and body["messages"] == MESSAGES
    elif placement == "user":
        assert body["messages"][-1]["content"] == [RESULT, {"text": "[LoopGuard] note"}]
    else:
        assert body["messages"][-1]["content"][0]["toolResult"]["content"][-1] == {"text": "[LoopGuard] note"}
    assert MESSAGES[-1]["content"] == [RESULT]  # the client's objects untouched


def test_a_replaced_result_is_an_error_observation():
    at = CONVERSE.edits.result_index(MESSAGES, "t1", 1)
    assert at == 2
    body = valid(CONVERSE.edits.replace_result(MESSAGES, at, "[loopguard] not run", "t1"))
    result = body["messages"][2]["content"][0]["toolResult"]
    assert result == {"toolUseId": "t1", "content": [{"text": "[loopguard] not run"}], "status": "error"}


def test_a_refused_call_and_a_corrective_append_valid_turns():
    vetoed = CONVERSE.edits.veto_exchange(ToolCall("t9", "read_file", '{"path": "a.txt"}'), "[loopguard] rejected")
    valid([*MESSAGES, *vetoed])
    unnamed = CONVERSE.edits.veto_exchange(ToolCall("", "read_file", "not json"), "[loopguard] rejected")
    body = valid([*MESSAGES, *unnamed])
    assert body["messages"][-2]["content"][0]["toolUse"]["input"] == {"arguments": "not json"}
    asked = [
        *MESSAGES,
        {"role": "assistant", "content": [{"text": "Done?"}]},
        {"role": "user", "content": [{"text": "more"}]},
    ]
    for answer in ("Here it is.", ""):
        valid([*asked, *CONVERSE.edits.corrective(answer, "[LoopGuard] call a tool")])


def test_tools_closed_is_a_valid_request_with_no_tool_to_call():
    body = CONVERSE.edits.without_tools(CONVERSE.requests.with_items(PAYLOAD, MESSAGES))
    assert "toolConfig" not in body and refusal(body) is None
    texts = [b["text"] for m in body["messages"] for b in m["content"]]
    assert texts == ["go", "Reading.", '[called read_file with {"path":"a.txt"}]', '[result: same\n{"n":1}]']


def test_a_refused_call_shown_last_turns_extended_thinking_off():
    payload = {**PAYLOAD, "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}}}
    vetoed = CONVERSE.edits.veto_exchange(ToolCall("t9", "read_file", "{}"), "[loopguard] rejected")
    body = CONVERSE.requests.with_items(payload, [*MESSAGES, *vetoed])
    assert body["additionalModelRequestFields"]["thinking"] == {"type": "disabled"}
    assert (
        CONVERSE.requests.with_items(payload, MESSAGES)["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
    )


def test_the_gateways_own_replies_are_what_botocore_reads():
    reply = converse_reply(200, orjson.dumps(CONVERSE.authored.termination_reply("Stopped.", PAYLOAD)))
    assert reply["output"]["message"]["content"] == [{"text": "Stopped."}] and reply["stopReason"] == "end_turn"
    events = stream_events(b"".join(CONVERSE.authored.termination_stream("Stopped.", PAYLOAD)))
    assert [next(iter(e)) for e in events] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    assert events[1]["contentBlockDelta"]["delta"]["text"] == "Stopped."


@pytest.mark.parametrize(
    "kind, code, expected",
    [
        ("invalid_request_error", None, "ValidationException"),
        ("rate_limit_error", None, "ThrottlingException"),
        ("not_found_error", None, "ResourceNotFoundException"),
        ("invalid_request_error", "loop_detected", "ValidationException"),
        ("upstream_error", "upstream_timeout", "ModelTimeoutException"),
    ],
)
def test_errors_are_botocores_exception_classes(kind, code, expected):
    body = CONVERSE.authored.error_body("why", kind, code)
    assert converse_reply(400, orjson.dumps(body))["Error"] == {"Code": expected, "Message": "why"}


def test_an_error_mid_stream_is_an_exception_frame_botocore_raises():
    from botocore.exceptions import EventStreamError

    frame = CONVERSE.authored.error_event(
        CONVERSE.authored.error_body("loop", "invalid_request_error", "loop_detected")
    )
    with pytest.raises(EventStreamError) as caught:
        stream_events(frame)
    assert caught.value.response["Error"] == {"Code": "validationException", "Message": "loop"}


@pytest.mark.parametrize(
    "body, reader",
    [
        (PAYLOAD, "converse"),
        ({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, "converse"),
        ({"system": "x", "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "system": "x"}, "anthropic"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "chat"),
    ],
)
def test_replay_tells_a_converse_body_from_the_others(body, reader):
    found = registry.reader_of(body)
    assert found is not None and found.name == reader
