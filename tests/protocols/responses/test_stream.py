"""The Responses stream filter: calls held until judged, everything else relayed at once, and a
client stream the openai SDK reads without error whatever was dropped, re-asked or ended."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.responses_wire import (
    USAGE,
    custom_call,
    encode,
    function_call,
    message,
    reasoning,
    sse,
    stream_events,
)

from gateway.protocols.failure import StreamFailure
from gateway.protocols.responses.stream import ResponsesStreamFilter
from gateway.trace.model import ToolCall

from ..filters import responses_filter
from .oracle import check_numbering, client_events

pytestmark = pytest.mark.usefixtures("fast_paths")


READ = function_call("read_file", '{"path": "a.txt"}', "call_1")
WRITE = function_call("write_file", '{"path": "b.txt", "text": "caf\\u00e9 \\"x\\""}', "call_2")
LIST = function_call("list_dir", '{"path": "."}', "call_3")
PATCH = custom_call("apply_patch", "*** Begin Patch\n*** End Patch", "call_4")


def keep_all(call: ToolCall, position: int) -> bool:
    return True


def refuse(*names: str):
    seen: list[tuple[ToolCall, int]] = []

    def judge(call: ToolCall, position: int) -> bool:
        seen.append((call, position))
        return call.name not in names

    judge.seen = seen  # type: ignore[attr-defined]
    return judge


def relay(filt: ResponsesStreamFilter, stream: bytes, size: int | None = None) -> bytes:
    """Feed ``stream`` (in ``size``-byte pieces; 0: one event per piece, as upstreams send
    them), then end the upstream."""
    if size == 0:
        pieces = [event + b"\n\n" for event in stream.split(b"\n\n")[:-1]]
    else:
        pieces = [stream] if size is None else [stream[i : i + size] for i in range(0, len(stream), size)]
    out = b"".join(b"".join(filt.feed(piece)) for piece in pieces)
    return out + b"".join(filt.end_upstream())


def run(output: list[dict], judge=keep_all, size: int | None = None) -> tuple[bytes, ResponsesStreamFilter]:
    filt = responses_filter(judge, keepalive_s=None)
    out = relay(filt, sse(stream_events(output)), size)
    if not filt.needs_decision:
        out += b"".join(filt.final())
    return out, filt


# --- streams the gateway does not change reach the client byte for byte -----------------------

UNCHANGED = {
    "text only": [message("Hello there, all good.")],
    "reasoning, text, one call": [reasoning(), message("Let me look."), READ],
    "parallel calls": [READ, LIST],
    "custom tool call": [PATCH],
    "calls with reasoning between": [READ, reasoning("rs_2"), LIST],
}


@pytest.mark.parametrize("size", [None, 0, 1, 7, 64])
@pytest.mark.parametrize("output", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_kept_calls_and_text_are_relayed_byte_for_byte(output, size):
    upstream = sse(stream_events(output))
    out, filt = run(output, keep_all, size)
    assert out == upstream
    assert [c.id for c in filt.round.kept] == [i["call_id"] for i in output if "call_id" in i]
    check_numbering(client_events(out))


def test_judge_sees_each_complete_call_with_its_position():
    judge = refuse()
    run([message("x"), READ, PATCH], judge, size=5)
    assert judge.seen == [
        (ToolCall("call_1", "read_file", '{"path": "a.txt"}'), 0),
        (ToolCall("call_4", "apply_patch", "*** Begin Patch\n*** End Patch"), 1),
    ]


def test_text_goes_out_before_the_call_is_complete():
    filt = responses_filter(keep_all, keepalive_s=None)
    events = stream_events([message("Hi"), READ])
    first_call_event = next(i for i, e in enumerate(events) if e.get("item", {}).get("type") == "function_call")
    out = b"".join(filt.feed(sse(events[: first_call_event + 2])))
    assert out == sse(events[:first_call_event])  # the message's events; the call's are held
    assert not filt.needs_decision


# --- dropping calls --------------------------------------------------------------------------


def test_refused_second_call_is_left_out_and_the_rest_stays_consistent():
    out, filt = run([message("Reading."), READ, WRITE], refuse("write_file"))
    events = client_events(out)
    check_numbering(events)
    assert [e["item"].get("call_id") for e in events if e["type"] == "response.output_item.done"] == [None, "call_1"]
    assert filt.round.rejected == ToolCall("call_2", "write_file", WRITE["arguments"])
    assert filt.round.rejected_position == 1
    assert not filt.needs_decision
    closing = events[-1]["response"]
    assert closing["id"] == "resp_1" and closing["usage"] == USAGE


def test_first_refused_call_drops_every_later_call_of_the_round():
    judge = refuse("read_file")
    out, filt = run([READ, LIST, WRITE], judge)
    assert [c.id for c in filt.round.dropped] == ["call_1", "call_3", "call_2"]
    assert [call.id for call, _ in judge.seen] == ["call_1"]  # later calls are not even judged
    assert filt.needs_decision
    events = client_events(out)
    assert [e["type"] for e in events] == ["response.created", "response.in_progress"]


def test_terminate_ends_the_stream_with_a_final_message():
    filt = responses_filter(refuse("read_file"), keepalive_s=None)
    out = relay(filt, sse(stream_events([reasoning(), message("Trying again."), READ])))
    assert filt.needs_decision
    out += b"".join(filt.terminate("The agent is stuck repeating read_file; stopping."))
    out += b"".join(filt.final())
    assert not filt.needs_decision
    events = client_events(out)
    check_numbering(events)
    closing = events[-1]
    assert closing["type"] == "response.completed" and closing["response"]["status"] == "completed"
    assert closing["response"]["id"] == "resp_1"
    last = closing["response"]["output"][-1]
    assert last["content"][0]["text"] == "The agent is stuck repeating read_file; stopping."
    assert [i["type"] for i in closing["response"]["output"]] == ["reasoning", "message", "message"]


def test_terminate_before_anything_was_relayed_still_opens_the_stream():
    filt = responses_filter(keep_all, keepalive_s=None)
    out = b"".join(filt.terminate("Stopped.", model="gpt-4.1")) + b"".join(filt.final())
    events = client_events(out)
    check_numbering(events)
    assert events[0]["type"] == "response.created"


def test_continuation_relays_the_reask_as_the_rest_of_the_same_stream():
    aliases: list[tuple[str, str]] = []
    filt = responses_filter(refuse("read_file"), keepalive_s=None, on_alias=lambda *a: aliases.append(a))
    out = relay(filt, sse(stream_events([message("Let me read it."), READ])), 0)
    assert filt.needs_decision
    filt.begin_continuation()
    reask = stream_events([reasoning("rs_9"), message("I will not read it again.", "msg_9"), LIST], "resp_2")
    out += relay(filt, sse(reask), size=11)
    out += b"".join(filt.final())
    events = client_events(out)
    check_numbering(events)
    assert sum(e["type"] == "response.created" for e in events) == 1
    closing = events[-1]["response"]
    # One response for the client (its SDK checks the id stays the same); the upstream's id
    # for what the client got is reported, so a follow-up naming resp_1 can be sent as resp_2.
    assert closing["id"] == "resp_1" and aliases == [("resp_1", "resp_2")]
    assert filt.reply is not None and filt.reply["id"] == "resp_1"
    assert [i["id"] for i in closing["output"]] == ["msg_1", "rs_9", "msg_9", "fc_call_3"]
    assert closing["usage"]["total_tokens"] == 2 * USAGE["total_tokens"]  # the dropped round's too
    assert [c.id for c in filt.round.kept] == ["call_3"]


def test_continuation_that_is_refused_again_can_still_be_terminated():
    filt = responses_filter(refuse("read_file"), keepalive_s=None)
    out = relay(filt, sse(stream_events([READ])))
    filt.begin_continuation()
    out += relay(filt, sse(stream_events([READ], "resp_2")))
    assert filt.needs_decision
    out += b"".join(filt.terminate("Done."))
    out += b"".join(filt.final())
    events = client_events(out)
    check_numbering(events)
    assert [i["type"] for i in events[-1]["response"]["output"]] == ["message"]
    assert events[-1]["response"]["id"] == events[0]["response"]["id"] == "resp_1"


def test_undecided_stream_still_gets_its_closing_event():
    filt = responses_filter(refuse("read_file"), keepalive_s=None)
    out = relay(filt, sse(stream_events([message("Hm."), READ])))
    out += b"".join(filt.final()) + b"".join(filt.final())
    events = client_events(out)
    check_numbering(events)
    assert events[-1]["response"]["output"] == [message("Hm.")]


def test_incomplete_closing_is_kept_as_the_upstream_sent_it():
    events = stream_events([message("partial"), READ, WRITE], closing="response.incomplete")
    filt = responses_filter(refuse("write_file"), keepalive_s=None)
    out = relay(filt, sse(events)) + b"".join(filt.final())
    seen = client_events(out)
    check_numbering(seen)
    assert seen[-1]["type"] == "response.incomplete"


# --- holding text (a conversation at warn level) ---------------------------------------------


def held(judge=keep_all) -> ResponsesStreamFilter:
    return responses_filter(judge, keepalive_s=None, hold_text=True)


@pytest.mark.parametrize("size", [None, 0, 7])
@pytest.mark.parametrize("output", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_held_text_of_a_kept_round_goes_out_byte_for_byte(output, size):
    filt = held()
    out = relay(filt, sse(stream_events(output)), size) + b"".join(filt.final())
    assert out == sse(stream_events(output))


def test_held_text_waits_for_the_round_to_be_judged():
    filt = held()
    events = stream_events([reasoning("rs_1", "Thinking."), message("Let me read it."), READ])
    closing = len(events) - 1
    out = b"".join(filt.feed(sse(events[:closing])))
    assert [e["type"] for e in client_events(out)] == ["response.created", "response.in_progress"]
    out += b"".join(filt.feed(sse(events[closing:])))
    assert out == sse(events)


def test_a_refused_rounds_text_and_reasoning_are_never_shown():
    filt = held(refuse("read_file"))
    out = relay(filt, sse(stream_events([reasoning("rs_1", "Again."), message("Let me read it."), READ])), 0)
    assert filt.needs_decision
    filt.begin_continuation()
    out += relay(filt, sse(stream_events([message("Reading the list.", "msg_9"), LIST], "resp_2")), 5)
    out += b"".join(filt.final())
    events = client_events(out)
    check_numbering(events)
    assert b"Let me read it." not in out and b"Again." not in out
    assert [i["id"] for i in events[-1]["response"]["output"]] == ["msg_9", "fc_call_3"]


def test_a_refused_round_ended_by_the_final_text_shows_only_that_text():
    filt = held(refuse("read_file"))
    out = relay(filt, sse(stream_events([message("Let me read it."), READ])))
    out += b"".join(filt.terminate("Stopping here.")) + b"".join(filt.final())
    events = client_events(out)
    check_numbering(events)
    texts = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(texts) == "Stopping here."
    assert [i["type"] for i in events[-1]["response"]["output"]] == ["message"]


def test_a_held_round_cut_short_shows_its_words_closed():
    filt = held()
    events = stream_events([message("Half of it")])
    cut = sse(events[:-3])  # the text streamed; its done events and the closing never came
    out = b"".join(filt.feed(cut)) + b"".join(filt.cut(cut))
    seen = client_events(out)
    assert "".join(e["delta"] for e in seen if e["type"] == "response.output_text.delta") == "Half of it"
    assert seen[-1]["type"] == "response.output_item.done" and seen[-1]["item"]["status"] == "incomplete"


# --- what upstreams send besides the common case ------------------------------------------------


def test_stream_ending_inside_a_call_never_completes_it():
    """Ended before ``response.completed``: the held call may be cut short; it is neither judged
    nor sent, and ``fail`` ends the stream with ``response.failed`` after what went out."""
    events = stream_events([READ])
    cut = [
        e
        for e in events
        if e["type"] not in ("response.output_item.done", "response.completed", "response.function_call_arguments.done")
    ]
    judge = refuse()
    filt = responses_filter(judge, keepalive_s=None)
    out = relay(filt, sse(cut))
    assert judge.seen == [] and not filt.complete and b"call_1" not in out
    ended = b"".join(filt.fail(b"", StreamFailure("cut", "upstream_truncated")))
    assert b"response.failed" in ended and b"call_1" not in ended


def test_events_behind_a_held_call_wait_behind_it():
    events = stream_events([READ, message("after")])
    # An upstream that starts the next item before finishing the call: the call is released as
    # one block when judged, then what waited behind it, renumbered to stay increasing.
    done = next(i for i, e in enumerate(events) if e["type"] == "response.output_item.done")
    text = [i for i, e in enumerate(events) if e.get("output_index") == 1]
    order = events[:done] + [events[i] for i in text] + [events[done]] + events[text[-1] + 1 :]
    order = [{**e, "sequence_number": seq} for seq, e in enumerate(order)]
    filt = responses_filter(keep_all, keepalive_s=None)
    seen = client_events(relay(filt, sse(order)))
    check_numbering(seen)
    assert [e["type"] for e in seen] == [e["type"] for e in events]
    assert [e.get("output_index") for e in seen] == [e.get("output_index") for e in events]


def test_done_marker_of_compatible_servers_is_sent_once_at_the_end():
    stream = sse(stream_events([READ])) + b"data: [DONE]\n\n"
    filt = responses_filter(refuse("read_file"), keepalive_s=None)
    out = relay(filt, stream)
    assert b"[DONE]" not in out
    out += b"".join(filt.terminate("stop")) + b"".join(filt.final())
    assert out.endswith(b"data: [DONE]\n\n") and out.count(b"[DONE]") == 1


def test_errors_comments_and_unreadable_events_pass_through():
    error = {"type": "error", "code": "server_error", "message": "boom", "param": None, "sequence_number": 2}
    stream = b": ping\n\n" + sse(stream_events([])[:2]) + encode(error) + b"data: {not json\n\n"
    out, _ = b"".join(responses_filter(keep_all).feed(stream)), None
    assert out == stream


def test_judge_failure_lets_the_call_through():
    def broken(call: ToolCall, position: int) -> bool:
        raise RuntimeError("detector bug")

    out, filt = run([READ], broken)
    assert out == sse(stream_events([READ]))
    assert len(filt.round.judge_errors) == 1


def test_keepalive_comment_while_a_call_is_held():
    filt = responses_filter(keep_all, keepalive_s=0.0)
    events = stream_events([READ])
    rest = sse(events[4:])
    out = b"".join(filt.feed(sse(events[:4])))
    assert not out.endswith(b": loopguard holding\n\n")  # a read that sent bytes needs none
    out += b"".join(filt.feed(rest[:5]))  # a read that sends nothing while the call is held
    assert out.endswith(b": loopguard holding\n\n")
    out += b"".join(filt.feed(rest[5:])) + b"".join(filt.end_upstream())
    check_numbering(client_events(out))


def test_custom_call_ids_are_reported():
    seen: list[set[str]] = []
    filt = responses_filter(keep_all, keepalive_s=None, on_custom=seen.append)
    relay(filt, sse(stream_events([READ, PATCH])))
    assert filt.custom_ids == {"call_4"} and seen == [{"call_4"}]


def test_closing_response_is_exposed_for_the_chain():
    _, filt = run([message("x"), READ], refuse("read_file"))
    assert filt.closing is not None and filt.closing["id"] == "resp_1"
    assert [i["type"] for i in filt.closing["output"]] == ["message", "function_call"]


def test_reencoded_events_are_valid_json_with_one_event_line():
    out, _ = run([READ, WRITE], refuse("write_file"))
    for block in out.split(b"\n\n")[:-1]:
        name, data = block.split(b"\n")
        assert orjson.loads(data.removeprefix(b"data: "))["type"] == name.removeprefix(b"event: ").decode()


def test_straggler_event_after_a_call_went_out_follows_it_or_is_dropped_with_it():
    for judge, expect_kept in ((keep_all, True), (refuse("read_file"), False)):
        events = stream_events([READ])
        straggler = {
            "type": "response.function_call_arguments.done",
            "item_id": READ["id"],
            "output_index": 0,
            "name": READ["name"],
            "arguments": READ["arguments"],
            "sequence_number": 99,
        }
        stream = sse(events[:-1]) + encode(straggler) + sse(events[-1:])
        filt = responses_filter(judge, keepalive_s=None)
        out = relay(filt, stream)
        assert (out.count(b"event: response.function_call_arguments.done") == 2) is expect_kept
        check_numbering(client_events(out + b"".join(filt.final())))


ITEMS = st.sampled_from(["message", "reasoning", "call", "custom"])


def build(kinds: list[str], prefix: str) -> list[dict]:
    out = []
    for n, kind in enumerate(kinds):
        ident = f"{prefix}{n}"
        out.append(
            {
                "message": lambda: message(f"text {ident}", f"msg_{ident}"),
                "reasoning": lambda: reasoning(f"rs_{ident}"),
                "call": lambda: function_call("read_file", f'{{"n": "{ident}"}}', f"call_{ident}"),
                "custom": lambda: custom_call("apply_patch", f"patch {ident}", f"call_{ident}"),
            }[kind]()
        )
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(ITEMS, max_size=5),
    st.lists(ITEMS, max_size=4),
    st.sets(st.integers(0, 4)),
    st.integers(0, 200),
    st.booleans(),
    st.booleans(),
)
def test_whatever_is_dropped_or_decided_the_client_stream_stays_valid(first, second, refused, size, reask, hold):
    def judge(call: ToolCall, position: int) -> bool:
        return position not in refused

    filt = responses_filter(judge, keepalive_s=None, hold_text=hold)
    out = relay(filt, sse(stream_events(build(first, "a"))), size)
    if filt.needs_decision and reask:
        filt.begin_continuation()
        out += relay(filt, sse(stream_events(build(second, "b"), "resp_2")), size)
    if filt.needs_decision:
        out += b"".join(filt.terminate("Stopping here."))
    out += b"".join(filt.final())
    events = client_events(out)
    check_numbering(events)
    assert len({e["response"]["id"] for e in events if "response" in e}) == 1
    shown_calls = [
        e["item"]["call_id"] for e in events if e["type"] == "response.output_item.done" and "call_id" in e["item"]
    ]
    kept = [c.id for r in filt.rounds for c in r.kept]
    assert shown_calls == kept
    if hold:  # a round all of whose calls were refused shows nothing
        shown = {e["item"]["id"] for e in events if e["type"] == "response.output_item.done"}
        for state, items in zip(filt.rounds, (build(first, "a"), build(second, "b")), strict=False):
            assert not (state.all_dropped and shown & {i["id"] for i in items})


ODD = st.one_of(
    st.binary(max_size=64),
    st.sampled_from(
        [
            b'data: {"type": "response.output_item.added", "output_index": "0", "item": []}\n\n',
            b'data: {"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call"}}\n\n',
            b'data: {"type": "response.output_item.done", "output_index": 0, "item": null}\n\n',
            b'data: {"type": "response.completed", "response": []}\n\n',
            b'data: {"type": "response.completed", "sequence_number": "x", "response": {"output": 5}}\n\n',
            b'event: response.created\ndata: {"type": "response.created", "response": {"id": 7}}\n\n',
            b"data: [DONE]\n\n",
            b"data: 12\n\n",
            b": keepalive\n\n",
            b"\r\n\r\n",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ODD, max_size=12), st.booleans())
def test_odd_upstream_bytes_never_raise(pieces, refuse_all):
    filt = responses_filter((lambda call, position: not refuse_all), keepalive_s=None)
    for piece in pieces:
        filt.feed(piece)
    filt.end_upstream()
    if filt.needs_decision:
        filt.terminate("stop")
    filt.final()
