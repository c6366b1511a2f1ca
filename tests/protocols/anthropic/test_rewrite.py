"""Edits on a Messages request: warning anchors, replaced results, refused calls shown, tools off.
Every edited request must still be one the API accepts, and the client's objects stay as sent."""

from __future__ import annotations

import copy

import pytest

from gateway.protocols.anthropic.parse import conversation
from gateway.protocols.anthropic.protocol import build as anthropic_adapter
from gateway.protocols.anthropic.rewrite import result_index
from gateway.trace.builder import build_trace, run_start
from gateway.trace.model import ToolCall
from gateway.trace.settings import TraceSettings

from .payloads import body
from .wire import assert_valid_request

A = anthropic_adapter()
WARN = "[LoopGuard] Loop detected (repeat): you called `read_file` 5 times without making progress."
VETO = "[loopguard] This `read_file` call was rejected and not executed."


def edit(payload, fn):
    before = copy.deepcopy(payload)
    items = fn(A.requests.items(payload))
    out = A.outgoing(payload, items)
    assert payload == before, "the client's request is never mutated"
    assert_valid_request(out)
    return out


def test_warn_in_the_system_prompt_blocks():
    payload = body()
    out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, "system"))
    assert out["system"] == [*payload["system"], {"type": "text", "text": WARN}]
    assert out["messages"] == payload["messages"]


@pytest.mark.parametrize(
    "system, expected",
    [
        ("Be brief.", "Be brief.\n\n" + WARN),
        (None, WARN),
    ],
)
def test_warn_in_a_system_prompt_string_or_none(system, expected):
    payload = {**body(), "system": system} if system else {k: v for k, v in body().items() if k != "system"}
    out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, "system"))
    assert out["system"] == expected


def test_warn_as_user_text_goes_after_the_tool_results():
    payload = body()
    out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, "user"))
    last = out["messages"][-1]["content"]
    assert last[:3] == payload["messages"][-1]["content"]
    assert last[3] == {"type": "text", "text": WARN}
    assert out["messages"][:-1] == payload["messages"][:-1]


def test_warn_in_the_last_tool_result():
    payload = body()
    out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, "tool_result"))
    blocks = out["messages"][-1]["content"]
    assert blocks[1]["content"] == "No such file: src/util.py\n\n" + WARN and blocks[1]["is_error"] is True
    assert blocks[0] == payload["messages"][-1]["content"][0] and blocks[2] == payload["messages"][-1]["content"][2]


def test_warn_in_a_tool_result_with_block_content():
    payload = body()
    read, missing, reminder = payload["messages"][-1]["content"]
    payload["messages"][-1]["content"] = [missing, read, reminder]
    out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, "tool_result"))
    assert out["messages"][-1]["content"][1]["content"] == [*read["content"], {"type": "text", "text": WARN}]


@pytest.mark.parametrize("placement", ["user", "tool_result"])
def test_warn_on_a_plain_prompt_keeps_the_prompt_text(placement):
    payload = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "Fix the bug."}]}
    out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, placement))
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}, {"type": "text", "text": WARN}]}
    ]


def test_warn_before_an_assistant_prefill_goes_to_the_last_user_turn():
    payload = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "List files as JSON."}, {"role": "assistant", "content": "["}],
    }
    out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, "tool_result"))
    assert out["messages"][1] == {"role": "assistant", "content": "["}
    assert out["messages"][0]["content"][-1]["text"] == WARN


def test_the_warning_never_starts_a_new_run():
    payload = body()
    for placement in ("system", "user", "tool_result"):
        out = edit(payload, lambda items: A.edits.add_anchor(items, WARN, placement))
        assert run_start(conversation(out, out["messages"]).turns) == 2


def test_a_replaced_result_is_an_error_observation():
    payload = body()
    out = edit(payload, lambda items: A.edits.replace_result(items, 4, VETO, "toolu_01B"))
    blocks = out["messages"][4]["content"]
    assert blocks[0] == {"type": "tool_result", "tool_use_id": "toolu_01B", "content": VETO, "is_error": True}
    assert blocks[1:] == payload["messages"][4]["content"][1:]
    trace = build_trace(conversation(out, out["messages"]), TraceSettings())
    assert [e.vetoed for e in trace.events] == [False, True, False]


def parallel(*order: str) -> list[dict]:
    """The conversation ending in one round of parallel calls, answered by one user turn whose
    results come in ``order`` (an agent reports them as its calls finish), then a reminder."""
    uses = [{"type": "tool_use", "id": ident, "name": "read_file", "input": {"path": ident}} for ident in sorted(order)]
    results = [{"type": "tool_result", "tool_use_id": ident, "content": f"out of {ident}"} for ident in order]
    return [
        *A.requests.items(body())[:3],
        {"role": "assistant", "content": uses},
        {"role": "user", "content": [*results, {"type": "text", "text": "<system-reminder/>"}]},
    ]


@pytest.mark.parametrize(
    "order, call_id",
    [
        (("toolu_01B", "toolu_01C"), "toolu_01B"),
        (("toolu_01B", "toolu_01C"), "toolu_01C"),
        (("toolu_01C", "toolu_01B"), "toolu_01B"),
        (("toolu_01B", "toolu_01C", "toolu_01D"), "toolu_01B"),
        (("toolu_01B", "toolu_01C", "toolu_01D"), "toolu_01C"),
        (("toolu_01D", "toolu_01B", "toolu_01C"), "toolu_01D"),
    ],
)
def test_only_the_result_of_the_given_call_is_replaced(order, call_id):
    items = parallel(*order)
    out = A.edits.replace_result(items, 4, VETO, call_id)
    for before, after in zip(items[4]["content"], out[4]["content"], strict=True):
        if before.get("tool_use_id") == call_id:
            assert after == {**before, "content": VETO, "is_error": True}
        else:
            assert after == before


@pytest.mark.parametrize("call_id", ["toolu_01Z", ""])
def test_a_call_no_result_answers_changes_nothing(call_id):
    items = parallel("toolu_01B", "toolu_01C")
    assert A.edits.replace_result(items, 4, VETO, call_id) == items


@pytest.mark.parametrize("index", [0, 1, 99, -1])
def test_replacing_where_there_is_no_result_changes_nothing(index):
    items = A.requests.items(body())
    assert A.edits.replace_result(items, index, VETO, "toolu_01B") == items


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ('{"path": "src/app.py"}', {"path": "src/app.py"}),
        ("", {}),
        ("not json", {"arguments": "not json"}),
        ("[1, 2]", {"arguments": "[1, 2]"}),
    ],
)
def test_a_refused_call_is_shown_with_its_error_observation(arguments, expected):
    payload = body()
    call = ToolCall("toolu_01Z", "read_file", arguments)
    out = edit(payload, lambda items: [*items, *A.edits.veto_exchange(call, VETO)])
    ask, answer = out["messages"][-2:]
    assert ask == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_01Z", "name": "read_file", "input": expected}],
    }
    assert answer == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01Z", "content": VETO, "is_error": True}],
    }
    events = build_trace(conversation(out, out["messages"]), TraceSettings()).events
    assert events[-1].vetoed and events[-1].tool == "read_file"


def test_a_refused_call_without_an_id_gets_one():
    ask, answer = A.edits.veto_exchange(ToolCall("", "grep", "{}"), VETO)
    ident = ask["content"][0]["id"]
    assert ident.startswith("toolu_") and answer["content"][0]["tool_use_id"] == ident


def test_a_refused_call_shown_in_mid_history_keeps_turns_valid():
    payload = body()
    call = ToolCall("toolu_01Z", "grep", '{"pattern": "TODO"}')
    out = edit(payload, lambda items: [*items[:3], *A.edits.veto_exchange(call, VETO), *items[3:]])
    assert len(out["messages"]) == 7


def test_a_reask_with_thinking_on_goes_without_thinking():
    payload = body(thinking={"type": "enabled", "budget_tokens": 2048})
    call = ToolCall("toolu_01Z", "read_file", '{"path": "a"}')
    out = edit(payload, lambda items: [*items, *A.edits.veto_exchange(call, VETO)])
    assert out["thinking"] == {"type": "disabled"}
    untouched = edit(payload, lambda items: [*items[:3], *A.edits.veto_exchange(call, VETO), *items[3:]])
    assert untouched["thinking"] == payload["thinking"]


def test_without_tools_keeps_the_tools_the_history_needs():
    payload = body(tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    out = A.edits.without_tools(payload)
    assert out["tool_choice"] == {"type": "none"} and out["tools"] == payload["tools"]
    assert_valid_request(out)


def test_with_items_leaves_every_other_field_alone():
    payload = body(stream=True, temperature=0.2, metadata={"user_id": "u-1"})
    out = A.outgoing(payload, A.requests.items(payload))
    assert out == payload


def test_a_client_system_message_is_not_moved():
    payload = {"model": "m", "messages": [{"role": "system", "content": "x"}]}
    assert A.outgoing(payload, A.requests.items(payload)) == payload


@pytest.mark.parametrize(
    "call_id, after, index",
    [
        ("toolu_01A", 1, 2),
        ("toolu_01C", 3, 4),
        ("toolu_01B", 3, 4),
        ("toolu_01C", 4, None),
        ("toolu_none", 0, None),
    ],
)
def test_where_a_calls_result_is(call_id, after, index):
    assert result_index(A.requests.items(body()), call_id, after) == index
