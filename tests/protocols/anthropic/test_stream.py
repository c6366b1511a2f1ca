"""The tool_use filter: held blocks judged, released byte for byte or dropped, and every stream it
writes accepted by the anthropic SDK's event types and stream accumulation."""

from __future__ import annotations

import orjson
import pytest

from gateway.protocols.failure import StreamFailure
from gateway.trace.model import ToolCall

from ..filters import anthropic_filter
from .streams import (
    PING,
    accumulate,
    calls_of,
    end,
    ev,
    keep_all,
    refuse,
    run,
    sdk_events,
    start,
    stream,
    text,
    thinking,
    tool,
)

pytestmark = pytest.mark.usefixtures("fast_paths")


def read(index: int) -> list[bytes]:
    return tool(index, "toolu_01Read", "read_file", '{"path": ', '"src/app.py"}')


def search(index: int) -> list[bytes]:
    return tool(index, "toolu_01Srch", "grep", '{"pattern": "TODO", "path": "src"}')


READ, SEARCH = read(1), search(2)
SERVER_TOOL = [
    ev(
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}},
        }
    ),
    ev(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "uvicorn h11"}'},
        }
    ),
    ev({"type": "content_block_stop", "index": 1}),
    ev(
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
        }
    ),
    ev({"type": "content_block_stop", "index": 2}),
]

# Streams with nothing refused: what the client gets is exactly what the upstream sent.
UNTOUCHED = {
    "text only": stream(start(), PING, text(0, "Hello", ", world."), end("end_turn", 12)),
    "text then a call, input split mid-key": stream(start(), text(0, "Let me read it."), READ, end()),
    "a call with no input deltas": stream(start(), tool(0, "toolu_01Ls", "list_files"), end()),
    "thinking, text, two parallel calls": stream(
        start(),
        thinking(0, "The user wants the TODOs."),
        text(1, "Searching."),
        tool(2, "toolu_01A", "grep", '{"pattern": "TODO"}'),
        tool(3, "toolu_01B", "read_file", '{"path": "caf\\u00e9 \\"x\\".md"}'),
        end(),
    ),
    "server tool use is not held": stream(start(), text(0, "Searching the web."), SERVER_TOOL, end("end_turn")),
    "an error event mid-stream": stream(
        start(),
        text(0, "Partial"),
        ev({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ),
}


def _pieces(data: bytes, how: str) -> list[bytes]:
    if how == "whole":
        return [data]
    if how == "events":  # how the API flushes: one event per chunk
        return [piece + b"\n\n" for piece in data.split(b"\n\n") if piece]
    if how == "bytes":
        return [data[i : i + 1] for i in range(len(data))]
    return [data[i : i + 7] for i in range(0, len(data), 7)]


@pytest.mark.parametrize("how", ["whole", "events", "7-byte chunks", "bytes"])
@pytest.mark.parametrize("name", list(UNTOUCHED))
def test_nothing_refused_is_relayed_byte_for_byte(name, how):
    upstream = UNTOUCHED[name]
    out, filt = run(_pieces(upstream, how))
    assert out == upstream
    assert not filt.needs_decision and not filt.round.dropped


def test_pings_while_a_call_is_held_go_out_at_once():
    upstream = stream(start(), text(0, "Reading."), READ[:2], PING, READ[2:], end())
    out, _ = run(_pieces(upstream, "7-byte chunks"))
    assert out == stream(start(), text(0, "Reading."), PING, READ, end())


def test_crlf_line_endings_are_relayed_as_sent():
    upstream = stream(start(), text(0, "Hi"), READ, end()).replace(b"\n", b"\r\n")
    out, _ = run(_pieces(upstream, "7-byte chunks"))
    assert out == upstream
    assert calls_of(accumulate(out)) == [("toolu_01Read", "read_file", {"path": "src/app.py"})]


def test_a_call_is_judged_with_its_complete_input_after_its_block_stops():
    seen: list[tuple[ToolCall, int]] = []
    upstream = stream(start(), text(0, "Two reads."), READ, SEARCH, end())
    run(_pieces(upstream, "bytes"), lambda call, pos: seen.append((call, pos)) or True)
    assert [(c.id, c.name, orjson.loads(c.arguments), p) for c, p in seen] == [
        ("toolu_01Read", "read_file", {"path": "src/app.py"}, 0),
        ("toolu_01Srch", "grep", {"pattern": "TODO", "path": "src"}, 1),
    ]


def test_a_held_call_goes_out_only_after_its_verdict():
    filt = anthropic_filter(keep_all, keepalive_s=None)
    call = read(0)
    assert filt.feed(stream(start(), call[:3])) == [start()]
    assert filt.feed(call[3]) == call


def test_the_refused_call_and_every_later_call_are_dropped():
    upstream = stream(start(), text(0, "Reading."), READ, SEARCH, end())
    out, filt = run(upstream, refuse("read_file"))
    assert filt.round.rejected.name == "read_file" and filt.round.rejected_position == 0
    assert [c.name for c in filt.round.dropped] == ["read_file", "grep"]
    assert b"tool_use" not in out and b"input_json_delta" not in out
    assert filt.needs_decision
    assert b"message_delta" not in out and b"message_stop" not in out  # withheld for the pipeline


def test_calls_before_the_refused_one_go_through_untouched():
    upstream = stream(start(), read(0), search(1), end())
    out, filt = run(upstream, refuse("grep"))
    assert out == stream(start(), read(0), end())
    assert not filt.needs_decision
    assert accumulate(out).stop_reason == "tool_use"


def test_text_after_a_dropped_call_is_renumbered_to_the_clients_positions():
    upstream = stream(start(), tool(0, "toolu_01X", "read_file", '{"path": "a"}'), text(1, "Done."), end())
    out, filt = run(upstream, refuse("read_file"))
    message = accumulate(out + b"".join(filt.final()))
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == "Done."
    assert message.stop_reason == "end_turn"


def test_terminate_ends_the_message_with_the_final_text_and_all_usage():
    upstream = stream(start(input_tokens=412), text(0, "Reading again."), READ, end("tool_use", 87))
    out, filt = run(upstream, refuse("read_file"))
    out += b"".join(filt.terminate("[LoopGuard] This run was stopped."))
    out += b"".join(filt.final())
    message = accumulate(out)
    assert [b.text for b in message.content] == ["Reading again.", "[LoopGuard] This run was stopped."]
    assert message.stop_reason == "end_turn" and message.id == "msg_01Up"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (412, 87)
    assert out.count(b"event: message_stop") == 1 and filt.final() == []


def test_a_reask_continues_the_same_message():
    first = stream(start("msg_01Up", 412), text(0, "Reading."), READ, end("tool_use", 87))
    out, filt = run(first, refuse("read_file"))
    filt.begin_continuation()
    second = stream(
        start("msg_02Re", 530, cache_read=400), PING, text(0, "Let me search instead."), SEARCH[:], end("tool_use", 40)
    )
    second = second.replace(b'"index": 2', b'"index": 1')  # the re-ask's own numbering
    for piece in _pieces(second, "events"):
        out += b"".join(filt.feed(piece))
    out += b"".join(filt.end_upstream()) + b"".join(filt.final())
    message = accumulate(out)
    assert message.id == "msg_01Up" and out.count(b"event: message_start") == 1
    assert [b.type for b in message.content] == ["text", "text", "tool_use"]
    assert calls_of(message) == [("toolu_01Srch", "grep", {"pattern": "TODO", "path": "src"})]
    assert message.stop_reason == "tool_use"
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens) == (942, 127, 400)


def test_a_reask_refused_again_then_terminated_adds_up_both_rounds():
    out, filt = run(stream(start(input_tokens=100), read(0), end("tool_use", 10)), refuse("read_file"))
    filt.begin_continuation()
    out += b"".join(
        filt.feed(stream(start("msg_02", 200), tool(0, "toolu_02", "read_file", "{}"), end("tool_use", 20)))
    )
    out += b"".join(filt.end_upstream())
    assert filt.needs_decision and len(filt.rounds) == 2
    out += b"".join(filt.terminate("Stopped.")) + b"".join(filt.final())
    message = accumulate(out)
    assert [b.text for b in message.content] == ["Stopped."]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (300, 30)


def test_nobody_deciding_still_closes_the_message():
    out, filt = run(stream(start(), read(0), end()), refuse("read_file"))
    out += b"".join(filt.final())
    message = accumulate(out)
    assert message.content == [] and message.stop_reason == "end_turn"
    assert out.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')


def test_a_stream_cut_inside_a_call_never_completes_it():
    """Ended before ``message_stop``: the held call may be cut short. It is neither judged nor
    sent (its start included); ``fail`` then writes the error event, nothing of the call before it."""
    seen = []
    cut = stream(start(), read(0)[:2])
    filt = anthropic_filter(lambda call, pos: seen.append(call.arguments) or True, keepalive_s=None)
    out = b"".join(filt.feed(cut)) + b"".join(filt.end_upstream())
    assert not filt.complete
    out += b"".join(filt.fail(b"", StreamFailure("cut", "upstream_truncated")))
    assert seen == [] and out.startswith(start()) and b"toolu_01Read" not in out
    assert orjson.loads(out.rpartition(b"data: ")[2]) == {
        "type": "error",
        "error": {"type": "api_error", "message": "cut"},
    }


def test_a_judge_that_raises_lets_the_call_through():
    def broken(call, position):
        raise RuntimeError("detector bug")

    upstream = stream(start(), read(0), end())
    out, filt = run(upstream, broken)
    assert out == upstream and len(filt.round.judge_errors) == 1


def test_a_long_hold_sends_pings_the_sdk_skips():
    filt = anthropic_filter(keep_all, keepalive_s=0)
    call = read(0)
    opened = filt.feed(stream(start(), call[0]))
    assert opened == [start()]  # something went out: no ping needed yet
    held = filt.feed(call[1])
    assert held == [b'event: ping\ndata: {"type":"ping"}\n\n']
    assert [e.type for e in sdk_events(b"".join(opened + held))] == ["message_start"]


@pytest.mark.parametrize(
    "odd",
    [
        b"data: not json\n\n",
        b": a comment\n\n",
        ev({"type": "content_block_delta", "index": 9, "delta": {"type": "text_delta", "text": "?"}}),
        ev({"type": "something_new", "x": 1}),
    ],
)
def test_events_it_cannot_read_are_relayed_as_they_are(odd):
    upstream = stream(start(), odd, text(0, "ok"), end("end_turn"))
    out, _ = run(upstream)
    assert out == upstream


TOOL_START = {"type": "content_block_start", "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": {}}}


@pytest.mark.parametrize(
    "forbidden",
    [
        pytest.param([ev(TOOL_START)], id="start-without-index"),
        *(pytest.param([ev({**TOOL_START, "index": i})], id=f"start-index-{i!r}") for i in ("0", 0.0, True, -1, None)),
        pytest.param([ev({"type": "content_block_delta", "index": "0", "delta": {}})], id="delta-index-string"),
        pytest.param([ev({"type": "content_block_start", "index": 0, "content_block": []})], id="start-block-list"),
        pytest.param([*text(0, "ok"), ev({**TOOL_START, "index": 0})], id="start-again-after-stop"),
        pytest.param(
            [*text(0, "ok"), ev({"type": "content_block_delta", "index": 0, "delta": {}})], id="delta-after-stop"
        ),
    ],
)
def test_events_the_protocol_forbids_end_the_stream_with_an_error_event(forbidden, fast_paths, request):
    """An index that is no integer (the SDK reads "0" or true as a block of its own), or a block
    begun again or continued after its stop (its start would pass under the earlier verdict):
    the client stream ends there with an ``api_error`` event, and nothing after it goes out."""
    if fast_paths and "delta" in request.node.callspec.id:
        # Deltas of blocks nothing holds pass unread on the fast path: a delta starts no call.
        pytest.skip("read on the general path only")
    upstream = stream(start(), *forbidden, *read(1), end())
    filt = anthropic_filter(keep_all, keepalive_s=None)
    out = b"".join(filt.feed(upstream))
    assert filt.failure is not None and filt.failure.code == "upstream_invalid_stream"
    assert out.endswith(
        b'"type":"api_error","message":"The upstream model provider sent a content block '
        + out.rpartition(b"sent a content block ")[2]
    )
    assert b"toolu_01Read" not in out and filt.feed(b"".join(read(2))) == [] and filt.final() == []


def test_nothing_is_relayed_after_the_message_was_ended():
    filt = anthropic_filter(refuse("read_file"), keepalive_s=None)
    filt.feed(stream(start(), read(0), end()[0]))  # message_stop not yet arrived
    assert filt.needs_decision
    ended = filt.terminate("Stopped.")
    assert filt.feed(end()[1]) == [] and filt.final() == []
    assert b"".join(ended).count(b"event: message_stop") == 1
