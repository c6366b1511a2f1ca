"""The chat adapter's reads and edits, as the pipeline calls them."""

from gateway.protocols.chat.choices import ChoicesFilter
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.protocols.chat.stream import ToolCallFilter
from gateway.trace.model import ToolCall

CALL = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
OTHER = {"id": "c2", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}


def reply(*messages):
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {"index": i, "message": m, "finish_reason": "tool_calls" if m.get("tool_calls") else "stop"}
            for i, m in enumerate(messages)
        ],
    }


def test_conversation_from_a_start_parses_only_the_new_messages_with_absolute_indices():
    payload = {
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ],
        "tools": [{"type": "function", "function": {"name": "t"}}],
    }
    items = CHAT.requests.items(payload)
    tail = CHAT.requests.conversation(payload, items, 1)
    assert [(t.index, t.text) for t in tail.turns] == [(1, "b"), (2, "c")]
    assert tail.tools == frozenset({"t"}) and CHAT.requests.conversation(payload, items).turns[1:] == tail.turns


def test_proposed_calls_per_choice_and_keep_calls_per_choice():
    both = reply(
        {"role": "assistant", "content": None, "tool_calls": [OTHER, CALL]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
    )
    names = [[c.name for c in calls] for calls in CHAT.replies.proposed_calls(both)]
    assert names == [["list_dir", "read_file"], ["read_file"]]
    kept = CHAT.replies.keep_calls(both, [1, 0])
    assert kept["choices"][0]["message"]["tool_calls"] == [OTHER]
    second = kept["choices"][1]
    assert "tool_calls" not in second["message"] and second["finish_reason"] == "stop"
    assert both["choices"][0]["message"]["tool_calls"] == [OTHER, CALL]  # the original is untouched


def test_answer_and_prepend_text():
    plain = reply({"role": "assistant", "content": "done"})
    said = CHAT.replies.answer(plain)
    assert said is not None and not said.calls and said.text == "done"
    assert CHAT.replies.prepend_text(plain, "note")["choices"][0]["message"]["content"] == "note\n\ndone"
    assert plain["choices"][0]["message"]["content"] == "done"
    assert CHAT.replies.answer({"choices": []}) is None


def test_veto_exchange_and_corrective_are_chat_messages():
    call = ToolCall("c1", "read_file", "{}")
    assistant, tool = CHAT.edits.veto_exchange(call, "[loopguard] no")
    assert assistant["tool_calls"][0]["id"] == "c1"
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "[loopguard] no"}
    assert CHAT.edits.corrective("plain", "call it") == [
        {"role": "assistant", "content": "plain"},
        {"role": "user", "content": "call it"},
    ]


def test_result_index_finds_the_result_after_its_call():
    items = [{"role": "assistant", "tool_calls": [CALL]}, {"role": "tool", "tool_call_id": "c1", "content": "x"}]
    assert CHAT.edits.result_index(items, "c1", 0) == 1 and CHAT.edits.result_index(items, "c9", 0) is None


def test_several_choices_get_the_filter_that_judges_each():
    judge = lambda call, position, choice=0: True  # noqa: E731
    assert isinstance(CHAT.streams.filter(judge, {"n": 2}), ChoicesFilter)
    assert isinstance(CHAT.streams.filter(judge, {"n": 1}), ToolCallFilter)


def test_without_tools_asks_for_text():
    payload = {
        "model": "m",
        "tools": [{"type": "function", "function": {"name": "t"}}],
        "tool_choice": "required",
        "parallel_tool_calls": True,
        "messages": [],
    }
    out = CHAT.edits.without_tools(payload)
    assert out["tool_choice"] == "none" and "parallel_tool_calls" not in out and out["tools"] == payload["tools"]
