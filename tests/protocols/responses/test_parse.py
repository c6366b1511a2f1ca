"""Responses request bodies -> neutral turns, for every input shape agents send."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.protocols.responses.parse import conversation_from_items, declared_tools, input_items
from gateway.trace.model import ToolCall, Turn

CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "read_file",
    "arguments": '{"path": "a.txt"}',
    "status": "completed",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "hello"}
READ = ToolCall("call_1", "read_file", '{"path": "a.txt"}')

# (input items, expected turns)
SHAPES = {
    "short-form user message": (
        [{"role": "user", "content": "hi"}],
        [Turn(0, "user", "hi")],
    ),
    "typed messages with parts, developer is system": (
        [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "a"},
                    {"type": "input_image", "image_url": "data:x"},
                    {"type": "input_text", "text": "b"},
                ],
            },
        ],
        [Turn(0, "system", "be brief"), Turn(1, "user", "a\nb")],
    ),
    "assistant output message from an earlier response": (
        [
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Sure.", "annotations": []}],
            }
        ],
        [Turn(0, "assistant", "Sure.")],
    ),
    "call and its output": (
        [{"role": "user", "content": "read a"}, CALL, OUTPUT],
        [Turn(0, "user", "read a"), Turn(1, "assistant", "", (READ,)), Turn(2, "tool", "hello", tool_call_id="call_1")],
    ),
    "parallel calls with reasoning between are one round": (
        [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            CALL,
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {**CALL, "call_id": "call_2", "arguments": "{}"},
            OUTPUT,
            {**OUTPUT, "call_id": "call_2", "output": "x"},
        ],
        [
            Turn(1, "assistant", "", (READ, ToolCall("call_2", "read_file", "{}"))),
            Turn(4, "tool", "hello", tool_call_id="call_1"),
            Turn(5, "tool", "x", tool_call_id="call_2"),
        ],
    ),
    "custom tool call and output": (
        [
            {"type": "custom_tool_call", "call_id": "call_9", "name": "apply_patch", "input": "*** Begin"},
            {"type": "custom_tool_call_output", "call_id": "call_9", "output": "Done!"},
        ],
        [
            Turn(0, "assistant", "", (ToolCall("call_9", "apply_patch", "*** Begin"),)),
            Turn(1, "tool", "Done!", tool_call_id="call_9"),
        ],
    ),
    "output as content parts": (
        [
            CALL,
            {
                **OUTPUT,
                "output": [
                    {"type": "input_text", "text": "line 1"},
                    {"type": "input_image", "image_url": "x"},
                    {"type": "input_text", "text": "line 2"},
                ],
            },
        ],
        [Turn(0, "assistant", "", (READ,)), Turn(1, "tool", "line 1\nline 2", tool_call_id="call_1")],
    ),
    "arguments and output as objects (off-spec, seen)": (
        [{**CALL, "arguments": {"path": "a.txt"}}, {**OUTPUT, "output": {"ok": True}}],
        [
            Turn(0, "assistant", "", (ToolCall("call_1", "read_file", '{"path":"a.txt"}'),)),
            Turn(1, "tool", '{"ok":true}', tool_call_id="call_1"),
        ],
    ),
    "built-in tool items and references are not turns": (
        [
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "item_reference", "id": "msg_0"},
            {"type": "mcp_call", "id": "mcp_1", "name": "x", "arguments": "{}", "server_label": "s"},
            {"role": "user", "content": "go"},
        ],
        [Turn(3, "user", "go")],
    ),
    "a message ends a round": (
        [CALL, {"role": "user", "content": "wait"}, {**CALL, "call_id": "call_2"}],
        [
            Turn(0, "assistant", "", (READ,)),
            Turn(1, "user", "wait"),
            Turn(2, "assistant", "", (ToolCall("call_2", "read_file", READ.arguments),)),
        ],
    ),
    "unreadable entries are skipped": (
        [
            None,
            3,
            "text",
            {"type": 5},
            {"role": "robot", "content": "x"},
            {**CALL, "name": ""},
            {"type": "function_call_output", "output": "orphan"},
        ],
        [Turn(6, "tool", "orphan")],
    ),
}


@pytest.mark.parametrize(("items", "turns"), SHAPES.values(), ids=SHAPES.keys())
def test_items_become_turns(items, turns):
    assert list(conversation_from_items(items).turns) == turns


def test_string_input_is_one_user_message():
    assert input_items({"input": "What is 2+2?"}) == [{"role": "user", "content": "What is 2+2?"}]
    assert input_items({"input": None}) == [] and input_items("x") == []


def test_chain_items_are_numbered_below_zero():
    turns = conversation_from_items([CALL, OUTPUT, {"role": "user", "content": "again"}], start=-2).turns
    assert [t.index for t in turns] == [-2, -1, 0]


TOOLS = {
    "functions and custom": (
        [{"type": "function", "name": "read_file", "parameters": {}}, {"type": "custom", "name": "apply_patch"}],
        {"read_file", "apply_patch"},
    ),
    "built-ins do not count": (
        [{"type": "web_search"}, {"type": "function", "name": "f"}, {"type": "mcp", "server_label": "x"}],
        {"f"},
    ),
    "namespaced": (
        [
            {
                "type": "namespace",
                "name": "fs",
                "description": "",
                "tools": [{"type": "function", "name": "ls"}, {"type": "custom", "name": "patch"}],
            }
        ],
        {"ls", "patch"},
    ),
    "chat-style nesting (seen)": ([{"type": "function", "function": {"name": "g"}}], {"g"}),
    "only built-ins": ([{"type": "file_search", "vector_store_ids": []}], None),
    "a nameless function: unknown set": ([{"type": "function", "name": "f"}, {"type": "function"}], None),
    "garbage entry": ([{"type": "function", "name": "f"}, "x"], None),
    "not a list": ({"type": "function", "name": "f"}, None),
}


@pytest.mark.parametrize(("tools", "names"), TOOLS.values(), ids=TOOLS.keys())
def test_declared_tools(tools, names):
    found = declared_tools({"tools": tools})
    assert found == (frozenset(names) if names is not None else None)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["type", "role", "content", "call_id", "name", "arguments", "input", "output", "text", "tools"]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_never_raises_on_odd_input(value):
    items = input_items({"input": value})
    conversation_from_items(items, declared_tools({"tools": value}))
    conversation_from_items(value)
