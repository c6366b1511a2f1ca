"""Chat Completions bodies as agents really send them -> Conversation (and on to a Trace)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.protocols.chat.parse import (
    content_text,
    conversation_from_body,
    conversation_from_messages,
    declared_tools,
    tool_calls_from_message,
)
from gateway.trace.builder import build_trace
from gateway.trace.model import Status, ToolCall, Turn
from gateway.trace.settings import TraceSettings


def call(id_: str, name: str, arguments) -> dict:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_plain_exchange_with_parallel_calls():
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "read both"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("a", "read", '{"p": "x"}'), call("b", "read", '{"p": "y"}')],
            },
            {"role": "tool", "tool_call_id": "a", "content": "X"},
            {"role": "tool", "tool_call_id": "b", "content": "Y"},
        ],
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
    }
    conv = conversation_from_body(body)
    assert conv.tools == frozenset({"read"})
    assert [t.role for t in conv.turns] == ["system", "user", "assistant", "tool", "tool"]
    assert conv.turns[2].tool_calls == (ToolCall("a", "read", '{"p": "x"}'), ToolCall("b", "read", '{"p": "y"}'))
    assert conv.turns[3] == Turn(3, "tool", "X", tool_call_id="a")
    trace = build_trace(conv, TraceSettings())
    assert [(e.tool, e.result, e.declared) for e in trace.events] == [("read", "X", True), ("read", "Y", True)]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("plain", "plain"),
        (None, ""),
        (
            [
                {"type": "text", "text": "a"},
                {"type": "image_url", "image_url": {"url": "data:..."}},
                {"type": "text", "text": "b"},
            ],
            "a\nb",
        ),
        (
            [{"type": "input_text", "text": "in"}, "bare string part", {"text": "untyped"}],
            "in\nbare string part\nuntyped",
        ),
        ([{"type": "text", "text": 5}, {"type": ["odd"], "text": "x"}, None, 7], ""),
        ({"unexpected": "object"}, ""),
        (42, ""),
    ],
)
def test_content_text(content, expected):
    assert content_text(content) == expected


def test_tool_result_as_content_parts_and_as_an_object():
    conv = conversation_from_messages(
        [
            {
                "role": "tool",
                "tool_call_id": "a",
                "content": [{"type": "text", "text": "part 1"}, {"type": "text", "text": "part 2"}],
            },
            {"role": "tool", "tool_call_id": "b", "content": {"exitCode": 0}},
        ]
    )
    assert [t.text for t in conv.turns] == ["part 1\npart 2", '{"exitCode":0}']


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ("rm -rf build", "rm -rf build"),  # not JSON: kept as sent
        ('{"a": ', '{"a": '),
        ({"b": 2, "a": [1]}, '{"b":2,"a":[1]}'),  # an object instead of a string
        (None, ""),
        (12, "12"),
    ],
)
def test_arguments_are_raw_text(arguments, expected):
    (parsed,) = tool_calls_from_message({"role": "assistant", "tool_calls": [call("a", "f", arguments)]})
    assert parsed.arguments == expected


def test_legacy_function_call_and_function_role():
    body = {
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {"role": "function", "name": "get_weather", "content": "sunny"},
        ],
        "functions": [{"name": "get_weather", "parameters": {}}],
    }
    conv = conversation_from_body(body)
    assert conv.tools == frozenset({"get_weather"})
    assert conv.turns[1].tool_calls == (ToolCall("", "get_weather", '{"city": "Paris"}'),)
    assert conv.turns[2] == Turn(2, "tool", "sunny", name="get_weather")
    (event,) = build_trace(conv, TraceSettings()).events
    assert (event.tool, event.result, event.status) == ("get_weather", "sunny", Status.OK)


def test_developer_is_system_and_unknown_roles_are_skipped():
    conv = conversation_from_messages(
        [
            {"role": "developer", "content": "rules"},
            {"role": "critic", "content": "x"},
            {"role": "user", "content": "hi"},
        ]
    )
    assert [(t.index, t.role) for t in conv.turns] == [(0, "system"), (2, "user")]


def test_results_without_a_call_and_reused_ids_survive_the_trip():
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "nobody", "content": "orphan"},
            {"role": "assistant", "tool_calls": [call("call_0", "ls", "{}")]},
            {"role": "tool", "tool_call_id": "call_0", "content": "a"},
            {"role": "assistant", "tool_calls": [call("call_0", "ls", '{"all": true}')]},
            {"role": "tool", "tool_call_id": "call_0", "content": "a .hidden"},
        ]
    }
    trace = build_trace(conversation_from_body(body), TraceSettings())
    assert [(e.raw_args, e.result) for e in trace.events] == [("{}", "a"), ('{"all": true}', "a .hidden")]


def test_tool_call_shapes_that_are_skipped():
    message = {
        "role": "assistant",
        "tool_calls": [
            None,
            "call",
            {"id": "x"},
            {"id": "y", "function": "read"},
            {"id": "z", "function": {"name": ""}},
            {"id": 5, "function": {"name": "ok_without_string_id", "arguments": "{}"}},
            {"id": "c", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}},
        ],
    }
    assert tool_calls_from_message(message) == (
        ToolCall("", "ok_without_string_id", "{}"),
        ToolCall("c", "apply_patch", "*** Begin Patch"),
    )
    assert tool_calls_from_message({"role": "assistant", "tool_calls": "nope"}) == ()
    assert tool_calls_from_message(None) == ()
    assert tool_calls_from_message({"function_call": {"name": "f"}}) == (ToolCall("", "f", ""),)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, None),
        ({"tools": []}, None),
        (
            {"tools": [{"type": "function", "function": {"name": "a"}}, {"function": {"name": "b"}}]},
            frozenset({"a", "b"}),
        ),
        ({"tools": [{"type": "custom", "custom": {"name": "patch"}}]}, frozenset({"patch"})),
        ({"tools": [{"type": "web_search"}]}, None),  # a name we cannot read: the set would be incomplete
        ({"tools": "all"}, None),
        (
            {"tools": [{"type": "function", "function": {"name": "a"}}], "functions": [{"name": "b"}]},
            frozenset({"a", "b"}),
        ),
    ],
)
def test_declared_tools(body, expected):
    assert declared_tools(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        "text",
        3,
        {"messages": None},
        {"messages": "x"},
        {"messages": {}},
        {"messages": [None, 1, "s", [], {"role": None}, {"role": "tool"}]},
    ],
)
def test_wrong_types_never_raise(body):
    conv = conversation_from_body(body)
    assert build_trace(conv, TraceSettings()).events == ()


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["user", "assistant", "tool", "function", "developer", "tool_calls", "function_call"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "tool_calls",
                    "tool_call_id",
                    "function",
                    "name",
                    "arguments",
                    "id",
                    "type",
                    "text",
                    "messages",
                    "tools",
                    "functions",
                    "function_call",
                    "custom",
                    "input",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_like, st.fixed_dictionaries({"messages": st.lists(json_like, max_size=8), "tools": json_like})))
def test_arbitrary_bodies_never_raise(body):
    conv = conversation_from_body(body)
    build_trace(conv, TraceSettings())
    json.dumps([t.text for t in conv.turns])
