"""``previous_response_id`` chains: what is recorded per response, how a chained request is seen
whole, and the outputs owed for calls the client never saw."""

from __future__ import annotations

import pytest
from support.responses_wire import function_call, message

from gateway.protocols.responses import chain
from gateway.protocols.responses.adapter import ResponsesAdapter
from gateway.state.base import ChainRecord
from gateway.trace.model import ToolCall

ADAPTER = ResponsesAdapter()
USER = {"role": "user", "content": "Summarize a.txt"}
NOTE = "[loopguard] This call was not run: it repeats a call that made no progress."


def output(call_id: str, text: str = "same content") -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


PREVIOUS = {
    "chained": ({"previous_response_id": "resp_1"}, "resp_1"),
    "store false carries everything": ({"previous_response_id": "resp_1", "store": False}, None),
    "no previous": ({"input": "hi"}, None),
    "not a string": ({"previous_response_id": 5}, None),
    "empty": ({"previous_response_id": ""}, None),
}


@pytest.mark.parametrize(("payload", "expected"), PREVIOUS.values(), ids=PREVIOUS.keys())
def test_previous_id(payload, expected):
    assert chain.previous_id(payload) == expected


def test_recorded_unless_store_false():
    assert chain.recorded({"input": "x"}) and chain.recorded({"store": True})
    assert not chain.recorded({"store": False}) and not chain.recorded(None)


def test_a_chain_is_judged_whole():
    # Three chained requests of an agent reading the same file: each carries one output only.
    record = None
    for n in range(1, 4):
        sent = [USER] if n == 1 else [output(f"call_{n - 1}")]
        reply_output = [function_call("read_file", '{"path": "a.txt"}', f"call_{n}")]
        record = chain.next_record(record, sent, reply_output)
    items = [output("call_3")]
    conv = ADAPTER.chained_conversation({"tools": [{"type": "function", "name": "read_file"}]}, record, items)
    calls = [c for t in conv.turns for c in t.tool_calls]
    assert [c.id for c in calls] == ["call_1", "call_2", "call_3"]
    results = [t for t in conv.turns if t.role == "tool"]
    assert [t.tool_call_id for t in results] == ["call_1", "call_2", "call_3"]
    assert results[-1].index == 0  # the request's own item keeps its position
    assert conv.turns[0].index == -len(record.items) and conv.tools == frozenset({"read_file"})


def test_unknown_previous_response_judges_what_is_visible():
    conv = ADAPTER.chained_conversation({}, None, [output("call_9")])
    assert [t.index for t in conv.turns] == [0]


def test_owed_outputs_precede_the_clients_items_unless_it_answers_them():
    dropped = [ToolCall("call_2", "write_file", "{}"), ToolCall("call_3", "apply_patch", "x"), ToolCall("", "f", "")]
    owed = chain.owed_outputs(dropped, NOTE, {"call_3"})
    assert owed == (
        {"type": "function_call_output", "call_id": "call_2", "output": NOTE},
        {"type": "custom_tool_call_output", "call_id": "call_3", "output": NOTE},
    )
    record = chain.next_record(None, [USER], [function_call("read_file", "{}", "call_1")], owed)
    items = [output("call_1")]
    assert chain.with_owed(record, items) == [*owed, output("call_1")]
    answered = [output("call_1"), output("call_2", "ran anyway")]
    assert chain.with_owed(record, answered) == [owed[1], *answered]
    assert chain.with_owed(None, items) is items
    assert chain.with_owed(ChainRecord((USER,)), items) is items


def test_a_record_holds_the_chain_then_what_was_sent_then_the_output():
    first = chain.next_record(None, [USER], [message("Reading.")])
    second = chain.next_record(first, [output("call_1")], [message("Done.", "msg_2")])
    assert list(second.items) == [USER, message("Reading."), output("call_1"), message("Done.", "msg_2")]
    assert second.owed == ()


def test_records_are_bounded_newest_kept():
    many = [output(f"call_{n}", "x") for n in range(chain.MAX_ITEMS + 50)]
    kept = chain.next_record(None, many, []).items
    assert len(kept) == chain.MAX_ITEMS and kept[-1] == many[-1]
    large = [output(f"call_{n}", "y" * 10_000) for n in range(100)]
    kept = chain.bounded(large)
    assert kept == large[-len(kept):] and sum(len(str(i)) for i in kept) <= chain.MAX_BYTES + 1000
    assert len(kept) < 100
