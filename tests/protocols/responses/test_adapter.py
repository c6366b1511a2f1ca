"""The Responses adapter as the guard uses it: the Adapter interface, and a looping agent's
request seen by the detectors and edited into a request the API accepts."""

from __future__ import annotations

import dataclasses

import pytest
from openai.types.responses import ResponseInputParam
from pydantic import TypeAdapter
from support.responses_wire import custom_call, function_call, message, response

from gateway.policy.actions import Action
from gateway.policy.loader import load_shipped_policy
from gateway.protocols.base import Answer
from gateway.protocols.responses.protocol import build as responses_adapter
from gateway.trace.builder import build_trace
from gateway.trace.model import ToolCall

from .oracle import validate_response

ADAPTER = responses_adapter()
INPUT = TypeAdapter(ResponseInputParam)
TOOLS = [
    {"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}},
    {"type": "web_search"},
]


ROLES = ("requests", "edits", "replies", "streams", "authored", "history")


@pytest.mark.parametrize(
    "role,name", [(role, member.name) for role in ROLES for member in dataclasses.fields(getattr(ADAPTER, role))]
)
def test_implements_every_member_of_every_role(role, name):
    mine = getattr(getattr(ADAPTER, role), name)
    assert mine is not None and (callable(mine) or isinstance(mine, (str, tuple)))
    assert ADAPTER.name == "responses"


def looping_payload(rounds: int, stream: bool = False) -> dict:
    items: list = [{"role": "user", "content": "What does config.yaml say about retries?"}]
    for n in range(rounds):
        items.append(function_call("read_file", '{"path": "config.yaml"}', f"call_{n}"))
        items.append({"type": "function_call_output", "call_id": f"call_{n}", "output": "retries: 3"})
    return {
        "model": "gpt-4.1",
        "input": items,
        "tools": TOOLS,
        "stream": stream,
        "instructions": "You are a careful assistant.",
    }


def judge(payload: dict):
    policy = load_shipped_policy().resolve()
    conv = ADAPTER.requests.conversation(payload, ADAPTER.requests.items(payload))
    return policy, build_trace(conv, policy.trace_settings)


def test_a_healthy_agent_passes():
    policy, trace = judge(looping_payload(1))
    assert policy.judge(trace).action == Action.PASS


def test_a_looping_agent_is_warned_with_an_anchor_the_api_accepts():
    payload = looping_payload(4)
    policy, trace = judge(payload)
    judgement = policy.judge(trace)
    assert judgement.action != Action.PASS
    assert [e.tool for e in trace.events] == ["read_file"] * 4 and trace.declared_tools == {"read_file"}
    text = policy.render("warn", judgement.finding)
    for placement in ("system", "user", "tool_result"):
        edited = ADAPTER.outgoing(payload, ADAPTER.edits.add_anchor(ADAPTER.requests.items(payload), text, placement))
        INPUT.validate_python(edited["input"])
        assert edited["input"][: len(payload["input"]) - 1] == payload["input"][:-1]
        assert text in str(edited["input"][-1])


def test_veto_exchange_and_without_tools_make_a_valid_reask():
    payload = looping_payload(3)
    reply = response(
        [
            custom_call("apply_patch", "*** Begin", "call_c"),
            function_call("read_file", '{"path": "config.yaml"}', "call_r"),
        ]
    )
    [calls] = ADAPTER.replies.proposed_calls(reply)
    assert calls == (
        ToolCall("call_c", "apply_patch", "*** Begin"),
        ToolCall("call_r", "read_file", '{"path": "config.yaml"}'),
    )
    items = ADAPTER.requests.items(payload)
    for call in calls:
        items = [*items, *ADAPTER.edits.veto_exchange(call, "[loopguard] not run")]
    reask = ADAPTER.edits.without_tools(ADAPTER.outgoing(payload, items))
    INPUT.validate_python(reask["input"])
    assert [i["type"] for i in reask["input"][-4:]] == [
        "custom_tool_call",
        "custom_tool_call_output",
        "function_call",
        "function_call_output",
    ]
    assert reask["tool_choice"] == "none" and reask["tools"] == TOOLS


def test_reply_helpers_and_replies_the_gateway_writes():
    reply = response(
        [message("Checking."), function_call("read_file", "{}", "call_1"), function_call("read_file", "{}", "call_2")]
    )
    assert ADAPTER.replies.answer(reply) == Answer(True, "Checking.")
    assert ADAPTER.replies.answer({"output": None}) is None
    validate_response(ADAPTER.replies.keep_calls(reply, [1]))
    payload = looping_payload(1, stream=True)
    assert ADAPTER.requests.stream(payload) and not ADAPTER.requests.stream({"stream": "yes"})
    assert ADAPTER.requests.model(payload) == "gpt-4.1" and ADAPTER.requests.model({"model": None}) == ""
    validate_response(ADAPTER.authored.termination_reply("Stopped.", payload))
    assert ADAPTER.authored.termination_stream("Stopped.", payload)[-1].startswith(b"event: response.completed\n")
    assert ADAPTER.authored.error_body("bad input", "invalid_request_error", "bad") == {
        "error": {"message": "bad input", "type": "invalid_request_error", "param": None, "code": "bad"}
    }


def test_stream_filter_reports_custom_calls_to_the_adapter():
    from support.responses_wire import sse, stream_events

    adapter = responses_adapter()
    filt = adapter.streams.filter(lambda call, position: False, {"model": "gpt-4.1"})
    filt.feed(sse(stream_events([custom_call("apply_patch", "x", "call_s")])))
    assert filt.needs_decision
    assert adapter.edits.veto_exchange(filt.round.rejected, "no")[0]["type"] == "custom_tool_call"


def test_result_index_and_corrective():
    items = looping_payload(2)["input"]
    assert ADAPTER.edits.result_index(items, "call_1", 3) == 4
    assert (
        ADAPTER.edits.result_index(items, "call_1", 4) is None and ADAPTER.edits.result_index(items, "nope", 0) is None
    )
    INPUT.validate_python(ADAPTER.edits.corrective("I am done.", "[loopguard] You must call read_file."))


def test_instructions_are_the_system_prompt():
    payload = looping_payload(1)
    turns = ADAPTER.requests.conversation(payload, ADAPTER.requests.items(payload)).turns
    assert (turns[0].index, turns[0].role, turns[0].text) == (-1, "system", "You are a careful assistant.")
    later = ADAPTER.requests.conversation(payload, ADAPTER.requests.items(payload), start=2).turns
    assert [t.index for t in later] == [2]  # only what a growing conversation added


def test_error_event_is_the_streams_error_event():
    from .oracle import client_events

    body = ADAPTER.authored.error_body("upstream timed out", "upstream_error", "timeout")
    [event] = client_events(ADAPTER.authored.error_event(body))
    assert event["type"] == "error" and event["message"] == "upstream timed out" and event["code"] == "timeout"
