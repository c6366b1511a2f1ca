"""A whole round in one read (chat/whole.py) gives what the event-by-event path gives: the same
bytes to the client, the same calls judged in the same order, the same round state."""

from __future__ import annotations

import pytest

from gateway.protocols.sse import SSEDecoder
from gateway.trace.model import ToolCall

from ..filters import chat_filter
from .streams import ENV, chunk, sse, tc, tools
from .test_stream import ALL_SHAPES, ARGS_A, FINISH, RECORDED, ROLE
from .test_stream_arguments import CASES

pytestmark = pytest.mark.usefixtures("fast_paths")


USAGE = {**ENV, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
MORE = {
    "text before the calls": sse(
        ROLE, chunk({"content": "Let me look."}), tools(tc(0, "call_a", "read", ARGS_A)), FINISH
    ),
    "text between the calls": sse(
        ROLE,
        tools(tc(0, "call_a", "read", ARGS_A)),
        chunk({"content": "and"}),
        tools(tc(1, "call_b", "read", ARGS_A)),
        FINISH,
    ),
    "usage after the finish": sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A)), FINISH, USAGE),
    "usage on the finish": sse(
        ROLE, tools(tc(0, "call_a", "read", ARGS_A)), chunk({}, "tool_calls", usage=USAGE["usage"])
    ),
    "no finish": sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A))),
    "no call": sse(ROLE, chunk({"content": "Done."}), chunk({}, "stop")),
    "a comment among the calls": sse(
        ROLE, tools(tc(0, "call_a", "read", "")), ": ping", tools(tc(0, args=ARGS_A)), FINISH
    ).replace(b"data: : ping", b": ping"),
    "an error event": sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A)), {"error": {"message": "overloaded"}}),
    "interleaved deltas": sse(
        ROLE,
        tools(tc(0, "call_a", "read", '{"path": ')),
        tools(tc(1, "call_b", "read", ARGS_A)),
        tools(tc(0, args='"a.txt"}')),
        FINISH,
    ),
}
STREAMS = {
    **{name: sse(*chunks) for name, chunks, _ in ALL_SHAPES},
    **MORE,
    "recorded": RECORDED,
    **{f"arguments: {name}": stream for name, stream in CASES.items()},
}


def keep_all(call: ToolCall, position: int) -> bool:
    return True


def refuse_first(call: ToolCall, position: int) -> bool:
    return position > 0


def refuse_second(call: ToolCall, position: int) -> bool:
    return position != 1


def broken(call: ToolCall, position: int) -> bool:
    raise RuntimeError("judge failed")


JUDGES = {
    "keep all": keep_all,
    "refuse the first": refuse_first,
    "refuse the second": refuse_second,
    "a judge that raises": broken,
}


def relay(stream: bytes, judge, whole: bool):
    asked: list[tuple[ToolCall, int]] = []

    def judging(call: ToolCall, position: int) -> bool:
        asked.append((call, position))
        return judge(call, position)

    filt = chat_filter(judging)
    decoder = SSEDecoder()
    reads = [stream] if whole else [e.raw for e in decoder.feed(stream) + decoder.flush()]
    out = b"".join(b for read in reads for b in filt.feed(read))
    out += b"".join(filt.end_upstream())
    state = filt.round
    decided = (filt.needs_decision, state.finish_withheld)
    out += b"".join(filt.final())
    return (
        out,
        asked,
        (
            state.kept,
            state.dropped,
            state.rejected_position,
            state.finish_reason,
            state.interleaved,
            len(state.judge_errors),
            decided,
        ),
    )


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("name", STREAMS)
def test_one_read_relays_what_event_by_event_relays(name, judge):
    whole = relay(STREAMS[name], JUDGES[judge], whole=True)
    events = relay(STREAMS[name], JUDGES[judge], whole=False)
    assert whole == events


def test_a_kept_round_in_one_read_goes_out_as_it_came():
    stream = sse(
        ROLE, tools(tc(0, "call_a", "read", "")), tools(tc(0, args=ARGS_A[:5])), tools(tc(0, args=ARGS_A[5:])), FINISH
    )
    filt = chat_filter(keep_all)
    assert b"".join(filt.feed(stream)) == stream  # the general reader: the same bytes, event by event
    assert filt.end_upstream() == [] and filt.final() == []
    assert [c.arguments for c in filt.round.kept] == [ARGS_A]
