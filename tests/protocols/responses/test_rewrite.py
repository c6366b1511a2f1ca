"""Interventions on a Responses request: anchors, replaced results, veto exchanges, no tools."""

from __future__ import annotations

import copy

import pytest
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from gateway.protocols.responses.parse import conversation_from_items
from gateway.protocols.responses.rewrite import add_anchor, replace_result, veto_exchange, with_items, without_tools
from gateway.trace.model import VETO_MARKER, ToolCall

CALL = {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "hello"}
USER = {"role": "user", "content": "read it"}
NOTE = f"{VETO_MARKER} You already read this file 4 times with the same result."
INPUT_ITEM = TypeAdapter(ResponseInputItemParam)

# (items, placement, expected items after the edit)
ANCHORS = {
    "system placement: developer message": (
        [USER, CALL, OUTPUT],
        "system",
        [USER, CALL, OUTPUT, {"type": "message", "role": "developer", "content": NOTE}],
    ),
    "system placement mirrors a client writing system messages": (
        [{"role": "system", "content": "rules"}, USER],
        "system",
        [{"role": "system", "content": "rules"}, USER, {"type": "message", "role": "system", "content": NOTE}],
    ),
    "user placement": (
        [USER, CALL, OUTPUT],
        "user",
        [USER, CALL, OUTPUT, {"type": "message", "role": "user", "content": NOTE}],
    ),
    "tool_result appends to the last output": (
        [USER, CALL, OUTPUT],
        "tool_result",
        [USER, CALL, {**OUTPUT, "output": f"hello\n\n{NOTE}"}],
    ),
    "tool_result on an output of parts adds a part": (
        [CALL, {**OUTPUT, "output": [{"type": "input_text", "text": "hello"}]}],
        "tool_result",
        [CALL, {**OUTPUT, "output": [{"type": "input_text", "text": "hello"}, {"type": "input_text", "text": NOTE}]}],
    ),
    "tool_result on a custom tool's output": (
        [{"type": "custom_tool_call_output", "call_id": "c", "output": ""}],
        "tool_result",
        [{"type": "custom_tool_call_output", "call_id": "c", "output": NOTE}],
    ),
    "tool_result without a trailing output falls back to an instruction": (
        [USER],
        "tool_result",
        [USER, {"type": "message", "role": "developer", "content": NOTE}],
    ),
}


@pytest.mark.parametrize(("items", "placement", "expected"), ANCHORS.values(), ids=ANCHORS.keys())
def test_anchor(items, placement, expected):
    before = copy.deepcopy(items)
    edited = add_anchor(items, NOTE, placement)
    assert edited == expected
    assert items == before  # the client's objects are never mutated
    for item in edited:
        INPUT_ITEM.validate_python(item)


def test_anchor_text_reaches_the_trace():
    edited = add_anchor([USER, CALL, OUTPUT], NOTE, "tool_result")
    assert conversation_from_items(edited).turns[-1].text.endswith(NOTE)


def test_replace_result_swaps_only_that_output():
    items = [USER, CALL, OUTPUT]
    edited = replace_result(items, 2, NOTE)
    assert edited == [USER, CALL, {**OUTPUT, "output": NOTE}] and items[2]["output"] == "hello"
    assert replace_result(items, 7, NOTE) is items  # out of range: nothing to replace


@pytest.mark.parametrize("custom", [False, True])
def test_veto_exchange_is_a_call_then_its_error_observation(custom):
    call = ToolCall("call_7", "write_file", '{"path": "x"}')
    items = veto_exchange(call, NOTE, custom)
    for item in items:
        INPUT_ITEM.validate_python(item)
    turns = conversation_from_items(items).turns
    assert turns[0].tool_calls == (call,)
    assert turns[1].role == "tool" and turns[1].tool_call_id == "call_7" and turns[1].text == NOTE
    assert items[0]["type"] == ("custom_tool_call" if custom else "function_call")


def test_without_tools_and_with_items_change_only_their_field():
    payload = {
        "model": "gpt-4.1",
        "input": "hi",
        "tools": [{"type": "function", "name": "f"}],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "previous_response_id": "resp_1",
    }
    assert without_tools(payload) == {**payload, "tool_choice": "none"}
    assert with_items(payload, [USER]) == {**payload, "input": [USER]}
    assert payload["tool_choice"] == "required" and payload["input"] == "hi"
