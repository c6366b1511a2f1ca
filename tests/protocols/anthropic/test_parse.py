"""Messages request bodies -> neutral turns: calls, results, run scope, declared tools."""

from __future__ import annotations

import pytest

from gateway.protocols.anthropic.parse import conversation, declared_tools
from gateway.trace.builder import build_trace, run_start
from gateway.trace.model import Status, ToolCall, Turn
from gateway.trace.settings import TraceSettings

from .payloads import body


def turns(payload):
    return conversation(payload, payload.get("messages")).turns


def test_an_agent_conversation_becomes_neutral_turns():
    assert turns(body()) == (
        Turn(-1, "system", "You are a coding agent working in /repo.\nUse the tools to inspect files before editing."),
        Turn(0, "user", "Find the TODOs in src and fix the first one."),
        Turn(1, "assistant", "I'll search for TODOs.", (ToolCall("toolu_01A", "grep", '{"pattern":"TODO"}'),)),
        Turn(2, "tool", "src/app.py:12: # TODO: handle None", (), "toolu_01A"),
        Turn(
            3,
            "assistant",
            "",
            (
                ToolCall("toolu_01B", "read_file", '{"path":"src/app.py"}'),
                ToolCall("toolu_01C", "read_file", '{"path":"src/util.py"}'),
            ),
        ),
        Turn(4, "tool", "def main():\n    pass", (), "toolu_01B"),
        Turn(4, "tool", "No such file: src/util.py", (), "toolu_01C", None, True),
    )


def test_results_pair_with_their_calls_and_keep_the_error_flag():
    trace = build_trace(conversation(body(), body()["messages"]), TraceSettings())
    assert [(e.tool, e.result is not None, e.status) for e in trace.events] == [
        ("grep", True, Status.OK),
        ("read_file", True, Status.OK),
        ("read_file", True, Status.ERROR),
    ]
    assert [e.message_index for e in trace.events] == [1, 3, 3]


def test_a_message_of_tool_results_does_not_restart_the_run():
    conv = turns(body())
    assert run_start(conv) == 2  # right after the one real prompt, whatever text rides along


@pytest.mark.parametrize(
    "content, text",
    [
        ("plain prompt", "plain prompt"),
        (
            [
                {"type": "text", "text": "look at this"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
            ],
            "look at this",
        ),
        ([{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}], ""),
        ([], ""),
    ],
)
def test_user_prompts_keep_their_text_and_skip_media(content, text):
    assert turns({"messages": [{"role": "user", "content": content}]}) == (Turn(0, "user", text),)


@pytest.mark.parametrize(
    "system, text",
    [
        ("Be brief.", "Be brief."),
        (
            [{"type": "text", "text": "A"}, {"type": "text", "text": "B", "cache_control": {"type": "ephemeral"}}],
            "A\nB",
        ),
        (None, None),
        ("", None),
        (42, None),
    ],
)
def test_the_system_prompt_string_or_blocks(system, text):
    found = [t.text for t in turns({"system": system, "messages": []}) if t.role == "system"]
    assert found == ([text] if text is not None else [])


@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        "x",
        {"messages": "nope"},
        {"messages": [None, 3, "hi", {"role": "robot", "content": "x"}]},
        {
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use"}, {"type": "tool_use", "name": ""}, "x", None]}
            ]
        },
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result"},
                        {"type": "tool_result", "tool_use_id": 5, "content": {"a": 1}, "is_error": "yes"},
                    ],
                }
            ]
        },
        {
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": 7, "name": "f", "input": {"x": {1, 2}}}]}
            ]
        },
        {"system": [{"type": "image"}, None], "tools": "all", "messages": [{"role": "user"}]},
    ],
)
def test_odd_bodies_never_raise(payload):
    messages = payload.get("messages") if isinstance(payload, dict) else None
    assert isinstance(conversation(payload, messages).turns, tuple)


def test_odd_blocks_are_read_as_far_as_they_go():
    payload = {
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": 7, "name": "f", "input": None},
                    {"type": "redacted_thinking", "data": "xx"},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "", "content": None, "is_error": "yes"}],
            },
        ]
    }
    assert turns(payload) == (Turn(0, "assistant", "", (ToolCall("", "f", "{}"),)), Turn(1, "tool", ""))


@pytest.mark.parametrize(
    "tools, names",
    [
        (
            [
                {"name": "read_file", "input_schema": {}},
                {"type": "web_search_20250305", "name": "web_search"},
                {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
            ],
            {"read_file", "web_search", "str_replace_based_edit_tool"},
        ),
        ([], None),
        (None, None),
        ([{"name": "a"}, {"description": "no name"}], None),  # incomplete: no call may be called unknown
        ("x", None),
    ],
)
def test_declared_tools(tools, names):
    assert declared_tools({"tools": tools}) == (frozenset(names) if names else None)


def test_parsing_from_a_start_reads_only_the_new_messages():
    payload = body()
    assert conversation(payload, payload["messages"], 3).turns == turns(payload)[4:]


def test_the_edited_item_list_is_read_not_the_payloads():
    payload = body()
    extra = [*payload["messages"], {"role": "assistant", "content": "Done."}]
    assert conversation(payload, extra).turns[-1] == Turn(5, "assistant", "Done.")
