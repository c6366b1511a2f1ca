"""``previous_response_id`` chains: what is recorded per response, how a chained request is seen
whole, and the outputs owed for calls the client never saw."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs
from support.responses_wire import function_call, message, response

from gateway.protocols.responses import chain
from gateway.protocols.responses.chain import WITHHELD
from gateway.protocols.responses.protocol import build as responses_adapter
from gateway.state import MemoryStore
from gateway.state.base import ChainRecord
from gateway.trace.model import ToolCall

ADAPTER = responses_adapter()
NS, OTHER = "c:" + "a" * 24 + ":", "c:" + "b" * 24 + ":"  # two clients' namespaces (credential hashes)
USER = {"role": "user", "content": "Summarize a.txt"}
NOTE = "[loopguard] This call was not run: it repeats a call that made no progress."


def seen_of(adapter):
    """The adapter's memory of replies (``responses.seen.Seen``), behind its history role."""
    return adapter.history.remember.__self__.seen


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


RECORDED = {
    "a conversation starts": ({"input": "Summarize a.txt"}, True),
    "a chained request": ({"previous_response_id": "resp_1", "input": [{"type": "function_call_output"}]}, True),
    "store false": ({"input": "x", "store": False}, False),
    "the whole history, every time": ({"input": [USER, function_call("read_file", "{}", "call_1")]}, False),
    "not a body": (None, False),
}


@pytest.mark.parametrize(("payload", "expected"), RECORDED.values(), ids=RECORDED.keys())
def test_recorded(payload, expected):
    assert chain.recorded(payload) is expected


TOOLS = [{"type": "function", "name": "read_file"}]


def chained(previous: str | None, items: list) -> dict:
    payload = {"model": "gpt-4.1", "input": items, "tools": TOOLS, "instructions": "Be careful."}
    return {**payload, "previous_response_id": previous} if previous else payload


async def test_a_chain_is_judged_whole_and_sent_by_reference():
    # An agent reading the same file: each chained request carries one output only.
    adapter, store = responses_adapter(), MemoryStore()
    previous = None
    for n in range(1, 4):
        payload = chained(previous, [USER] if n == 1 else [output(f"call_{n - 1}")])
        reply = response([function_call("read_file", '{"path": "a.txt"}', f"call_{n}")], f"resp_{n}")
        await adapter.history.remember(payload, reply, store, NS)
        previous = f"resp_{n}"
    payload = chained(previous, [output("call_3")])
    history = await adapter.history.history(payload, store, NS)
    items = [*history, *adapter.requests.items(payload)]
    conv = adapter.requests.conversation(payload, items)
    assert [c.id for t in conv.turns for c in t.tool_calls] == ["call_1", "call_2", "call_3"]
    assert [t.tool_call_id for t in conv.turns if t.role == "tool"] == ["call_1", "call_2", "call_3"]
    assert conv.turns[0].role == "system" and conv.turns[0].index == -1  # the instructions
    assert conv.tools == frozenset({"read_file"})
    # Unchanged history goes by reference; an anchor after it goes with the request's items.
    anchored = adapter.edits.add_anchor(items, "[loopguard] warn", "system")
    sent = adapter.outgoing(payload, anchored, len(history), NS)
    assert sent["previous_response_id"] == "resp_3" and sent["input"] == [output("call_3"), anchored[-1]]


async def test_unknown_previous_response_judges_what_is_visible_logged_once():
    adapter, store = responses_adapter(), MemoryStore()
    payload = chained("resp_elsewhere", [output("call_9")])
    with capture_logs() as logs:
        assert await adapter.history.history(payload, store, NS) == []
        assert await adapter.history.history(payload, store, NS) == []
    assert [e["event"] for e in logs] == ["chain_unknown"]
    assert adapter.outgoing(payload, [output("call_9")], 0, NS) == payload


async def test_another_clients_response_is_an_unknown_one():
    # Client A's chain holds two identical reads; client B names A's latest response.
    adapter, store = responses_adapter(), MemoryStore()
    seen_of(adapter).aliases.put("resp_2", "resp_up2")  # A's stream was continued: the upstream knows it by another id
    await adapter.history.remember(
        chained(None, [USER]), response([function_call("read_file", "{}", "call_1")], "resp_1"), store, NS
    )
    await adapter.history.remember(
        chained("resp_1", [output("call_1")]),
        response([function_call("read_file", "{}", "call_2")], "resp_2"),
        store,
        NS,
    )
    mine = chained("resp_2", [output("call_2")])
    assert len(await adapter.history.history(mine, store, NS)) == 4  # A itself: the whole chain
    theirs = chained("resp_2", [output("call_2", "B's own output")])
    with capture_logs() as logs:
        assert await adapter.history.history(theirs, store, OTHER) == []
    assert [e["event"] for e in logs] == ["chain_unknown"]
    # Nothing of A's shapes B's request: sent as B wrote it (not under A's upstream id)...
    assert adapter.outgoing(theirs, adapter.requests.items(theirs), 0, OTHER) == theirs
    # ...and B's reply starts B's own record, not a continuation of A's conversation.
    await adapter.history.remember(theirs, response([message("done")], "resp_3"), store, OTHER)
    record = await store.response_chain(chain.key(OTHER, "resp_3"))
    assert list(record.items) == [message("done")]  # (an output without its call is not kept)
    assert await store.response_chain(chain.key(NS, "resp_3")) is None


@pytest.mark.parametrize(
    ("namespace", "response_id"),
    [
        ("", "resp_1"),
        (NS, "resp_1"),
        ("", NS + "resp_1"),  # a client without a credential naming a key of A's
        (OTHER, NS + "resp_1"),
    ],
)
def test_no_response_id_makes_a_key_of_another_clients(namespace, response_id):
    assert chain.key(namespace, response_id) != chain.key(NS, "resp_1") or (namespace, response_id) == (NS, "resp_1")


async def test_store_false_is_neither_read_nor_recorded():
    adapter, store = responses_adapter(), MemoryStore()
    payload = {**chained("resp_1", [USER]), "store": False}
    await adapter.history.remember(payload, response([message("hi")], "resp_2"), store, NS)
    assert await store.response_chain(chain.key(NS, "resp_2")) is None
    assert await adapter.history.history(payload, store, NS) == []


async def test_withheld_calls_are_answered_in_the_next_request_of_the_chain():
    adapter, store = responses_adapter(), MemoryStore()
    first = chained(None, [USER])
    reply = response(
        [function_call("read_file", "{}", "call_1"), function_call("write_file", "{}", "call_2")], "resp_1"
    )
    kept = adapter.replies.keep_calls(reply, [1])  # the gateway let only the first call through
    await adapter.history.remember(first, kept, store, NS)
    payload = chained("resp_1", [output("call_1")])
    history = await adapter.history.history(payload, store, NS)
    sent = adapter.outgoing(payload, [*history, *adapter.requests.items(payload)], len(history), NS)
    assert sent["input"] == [
        {"type": "function_call_output", "call_id": "call_2", "output": WITHHELD},
        output("call_1"),
    ]


async def test_a_refused_call_shown_again_inside_the_history_is_not_sent_again():
    adapter, store = responses_adapter(), MemoryStore()
    await adapter.history.remember(
        chained(None, [USER]), response([function_call("read_file", "{}", "call_1")], "resp_1"), store, NS
    )
    payload = chained("resp_1", [output("call_1")])
    history = await adapter.history.history(payload, store, NS)
    vetoed = adapter.edits.veto_exchange(ToolCall("call_0", "read_file", "{}"), NOTE)  # the guard re-shows it
    reask = adapter.edits.veto_exchange(ToolCall("call_5", "read_file", "{}"), NOTE)  # a re-ask's own
    items = [history[0], *vetoed, *history[1:], *adapter.requests.items(payload), *reask]
    sent = adapter.outgoing(payload, items, 0, NS)
    assert sent["previous_response_id"] == "resp_1" and sent["input"] == [output("call_1"), *reask]


async def test_other_changes_inside_the_history_send_the_whole_conversation():
    adapter, store = responses_adapter(), MemoryStore()
    first = response([function_call("read_file", "{}", "call_1"), function_call("list_dir", "{}", "call_2")], "resp_1")
    await adapter.history.remember(chained(None, [USER]), adapter.replies.keep_calls(first, [1]), store, NS)
    payload = chained("resp_1", [output("call_1")])
    history = await adapter.history.history(payload, store, NS)
    assert history[-1]["call_id"] == "call_2"  # owed: the upstream waits for its output
    note = {"role": "user", "content": "inserted"}
    items = [history[0], note, *history[1:], *adapter.requests.items(payload)]
    sent = adapter.outgoing(payload, items, 0, NS)
    assert "previous_response_id" not in sent
    # Sent whole, an output for a call the conversation does not hold would be refused.
    assert sent["input"] == [USER, note, function_call("read_file", "{}", "call_1"), output("call_1")]


def test_owed_outputs_for_withheld_calls():
    dropped = [ToolCall("call_2", "write_file", "{}"), ToolCall("call_3", "apply_patch", "x"), ToolCall("", "f", "")]
    assert chain.owed_outputs(dropped, NOTE, {"call_3"}) == (
        {"type": "function_call_output", "call_id": "call_2", "output": NOTE},
        {"type": "custom_tool_call_output", "call_id": "call_3", "output": NOTE},
    )


def test_a_record_holds_the_chain_then_what_was_sent_then_the_output():
    first = chain.next_record(None, [USER], [message("Reading.")])
    second = chain.next_record(first, [output("call_1")], [message("Done.", "msg_2")])
    assert list(second.items) == [USER, message("Reading."), output("call_1"), message("Done.", "msg_2")]
    assert second.owed == ()


def test_records_are_bounded_newest_kept():
    many = [
        item
        for n in range(chain.MAX_ITEMS)
        for item in (function_call("read_file", "{}", f"call_{n}"), output(f"call_{n}", "x"))
    ]
    kept = chain.next_record(None, many, []).items
    assert len(kept) == chain.MAX_ITEMS and kept[-1] == many[-1]
    assert kept[0]["type"] == "function_call"  # never starts with an output whose call was cut
    large = [{"role": "user", "content": "y" * 10_000} for n in range(100)]
    kept = chain.bounded(large)
    assert kept == large[-len(kept) :] and sum(len(str(i)) for i in kept) <= chain.MAX_BYTES + 1000
    assert len(kept) < 100


def test_records_leave_out_the_gateways_refused_call_exchanges():
    call = function_call("read_file", "{}", "call_1")
    replaced = output("call_1", NOTE)  # the client's own result, replaced with our observation
    vetoed = ADAPTER.edits.veto_exchange(ToolCall("call_2", "read_file", "{}"), NOTE)
    owed = chain.owed_outputs([ToolCall("call_9", "write_file", "{}")], NOTE, set())
    record = chain.next_record(ChainRecord((USER, call)), [*owed, replaced, *vetoed], [message("ok")])
    assert list(record.items) == [USER, call, *owed, replaced, message("ok")]  # only ever appended


def test_owed_tail_is_the_outputs_for_calls_the_history_does_not_hold():
    call = function_call("read_file", "{}", "call_1")
    owed = list(chain.owed_outputs([ToolCall("call_9", "f", "{}")], NOTE, set()))
    assert chain.owed_tail([USER, call, output("call_1"), *owed]) == owed
    assert chain.owed_tail([USER, call, output("call_1")]) == []


async def test_a_continued_stream_is_continued_under_the_upstreams_id():
    adapter, store = responses_adapter(), MemoryStore()
    seen_of(adapter).aliases.put("resp_client", "resp_upstream")  # what the stream filter reports
    await adapter.history.remember(
        chained(None, [USER]), response([function_call("read_file", "{}", "call_1")], "resp_client"), store, NS
    )
    assert (await store.response_chain(chain.key(NS, "resp_client"))).upstream_id == "resp_upstream"
    payload = chained("resp_client", [output("call_1")])
    history = await adapter.history.history(payload, store, NS)
    sent = adapter.outgoing(payload, [*history, *adapter.requests.items(payload)], len(history), NS)
    assert sent["previous_response_id"] == "resp_upstream" and sent["input"] == [output("call_1")]


async def test_nothing_to_change_means_the_clients_own_payload():
    adapter, store = responses_adapter(), MemoryStore()
    await adapter.history.remember(
        chained(None, [USER]), response([function_call("read_file", "{}", "call_1")], "resp_1"), store, NS
    )
    payload = chained("resp_1", [output("call_1")])
    history = await adapter.history.history(payload, store, NS)
    assert adapter.outgoing(payload, [*history, *adapter.requests.items(payload)], len(history), NS) is payload


async def test_a_reply_to_a_request_sent_under_the_upstreams_id_extends_the_clients_chain():
    adapter, store = responses_adapter(), MemoryStore()
    seen_of(adapter).aliases.put("resp_client", "resp_upstream")
    await adapter.history.remember(
        chained(None, [USER]), response([function_call("read_file", "{}", "call_1")], "resp_client"), store, NS
    )
    payload = chained("resp_client", [output("call_1")])
    history = await adapter.history.history(payload, store, NS)
    sent = adapter.outgoing(payload, [*history, *adapter.requests.items(payload)], len(history), NS)
    await adapter.history.remember(sent, response([message("done")], "resp_next"), store, NS)
    record = await store.response_chain(chain.key(NS, "resp_next"))
    assert list(record.items) == [USER, function_call("read_file", "{}", "call_1"), output("call_1"), message("done")]
