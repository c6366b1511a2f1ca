"""The tool-call filter: assembled calls, judged and relayed so the openai SDK accepts the stream."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.protocols.chat.assembler import ToolCallAssembler
from gateway.protocols.chat.chunks import Envelope, content_chunk, finish_chunk
from gateway.protocols.chat.stream import ToolCallFilter
from gateway.protocols.sse import DONE, data_event
from gateway.trace.model import ToolCall

from ..filters import chat_filter
from .streams import (
    ENV,
    ENV2,
    accumulate,
    calls_of,
    chunk,
    client_chunks,
    run,
    sse,
    tc,
    tool_entries,
    tools,
)

pytestmark = pytest.mark.usefixtures("fast_paths")

ROLE = chunk({"role": "assistant", "content": None})
FINISH = chunk({}, "tool_calls")
ARGS_A = '{"path": "a.txt"}'
ARGS_B = '{"q": "caf\\u00e9 \\"x\\"", "n": 2}'

# The streamed tool-call shapes gateways keep breaking on.
SHAPES = {
    "id and name first, argument deltas without id": [
        tools(tc(0, "call_a", "read", ""), role="assistant", content=None),
        tools(tc(0, args='{"path"')),
        tools(tc(0, args=': "a.txt"}')),
        FINISH,
    ],
    "whole call in one delta": [ROLE, tools(tc(0, "call_a", "read", ARGS_A)), FINISH],
    "closing brace in its own delta": [
        ROLE,
        tools(tc(0, "call_a", "read")),
        tools(tc(0, args='{"path": "a.txt"')),
        tools(tc(0, args="}")),
        FINISH,
    ],
    "index omitted": [
        ROLE,
        tools(tc(id="call_a", name="read", args='{"path": ')),
        tools(tc(args='"a.txt"}')),
        FINISH,
    ],
    "extra empty-argument chunks": [
        ROLE,
        tools(tc(0, "call_a", "read", "")),
        tools(tc(0, args="")),
        tools(tc(0, args=ARGS_A)),
        tools(tc(0, args="")),
        tools(tc(0, args="")),
        FINISH,
    ],
    "finish in the same chunk as the last delta": [
        ROLE,
        tools(tc(0, "call_a", "read", '{"path": "a')),
        chunk({"tool_calls": [tc(0, args='.txt"}')]}, "tool_calls"),
    ],
}
PARALLEL = {
    "parallel calls with distinct indices": [
        ROLE,
        tools(tc(0, "call_a", "read", "")),
        tools(tc(0, args=ARGS_A)),
        tools(tc(1, "call_b", "search", "")),
        tools(tc(1, args=ARGS_B[:9])),
        tools(tc(1, args=ARGS_B[9:])),
        FINISH,
    ],
    "parallel calls in one delta": [
        ROLE,
        tools(tc(0, "call_a", "read", ARGS_A), tc(1, "call_b", "search", ARGS_B)),
        FINISH,
    ],
    "parallel calls without index": [
        ROLE,
        tools(tc(id="call_a", name="read", args=ARGS_A)),
        tools(tc(id="call_b", name="search", args=ARGS_B[:3])),
        tools(tc(args=ARGS_B[3:])),
        FINISH,
    ],
    "parallel calls all at index 0 (upstream bug)": [
        ROLE,
        tools(tc(0, "call_a", "read", ARGS_A)),
        tools(tc(0, "call_b", "search", ARGS_B[:5])),
        tools(tc(0, args=ARGS_B[5:])),
        FINISH,
    ],
    "indices starting at 1": [
        ROLE,
        tools(tc(1, "call_a", "read", ARGS_A)),
        tools(tc(2, "call_b", "search", ARGS_B)),
        FINISH,
    ],
    "arguments split at every character": [
        ROLE,
        tools(tc(0, "call_a", "read", "")),
        *[tools(tc(0, args=ch)) for ch in ARGS_A],
        tools(tc(1, "call_b", "search")),
        *[tools(tc(1, args=ch)) for ch in ARGS_B],
        FINISH,
    ],
}
ONE = [("call_a", "read", ARGS_A)]
TWO = [("call_a", "read", ARGS_A), ("call_b", "search", ARGS_B)]
ALL_SHAPES = [(name, chunks, ONE) for name, chunks in SHAPES.items()] + [
    (name, chunks, TWO) for name, chunks in PARALLEL.items()
]


def _deltas(chunks: list[dict]) -> list[list]:
    return [c["choices"][0]["delta"].get("tool_calls") for c in chunks if c["choices"][0]["delta"].get("tool_calls")]


@pytest.mark.parametrize("chunks,expected", [s[1:] for s in ALL_SHAPES], ids=[s[0] for s in ALL_SHAPES])
def test_assembler_merges_every_shape(chunks: list[dict], expected: list[tuple]) -> None:
    asm = ToolCallAssembler()
    completed = [call for deltas in _deltas(chunks) for call in asm.add(deltas)] + asm.close()
    assert [(c.id, c.name, c.arguments) for c in completed] == expected
    assert [c.position for c in completed] == list(range(len(expected)))


# Shapes whose indices the client can't use as they are (the SDK merges by `index`).
RENUMBERED = {
    "index omitted",
    "parallel calls without index",
    "parallel calls all at index 0 (upstream bug)",
    "indices starting at 1",
}


@pytest.mark.parametrize("name,chunks,expected", ALL_SHAPES, ids=[s[0] for s in ALL_SHAPES])
def test_sdk_accumulates_every_shape_after_the_filter(name: str, chunks: list[dict], expected: list) -> None:
    judged: list[tuple[ToolCall, int]] = []
    out, filt = run(sse(*chunks), lambda call, pos: judged.append((call, pos)) or True)
    completion = accumulate(out)
    assert calls_of(completion) == expected
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.id == ENV["id"] and completion.model == ENV["model"]
    assert [(c.id, c.name, c.arguments) for c, _ in judged] == expected
    assert [pos for _, pos in judged] == list(range(len(expected)))
    indices = [e["index"] for e in tool_entries(out)]
    assert list(dict.fromkeys(indices)) == list(range(len(expected))) and indices == sorted(indices)
    assert filt.round.kept == [ToolCall(*e) for e in expected] and not filt.needs_decision
    # nothing vetoed: byte for byte, unless the upstream's indices had to be repaired
    assert (out == sse(*chunks)) is (name not in RENUMBERED)


def test_legacy_function_call() -> None:
    stream = sse(
        chunk({"role": "assistant", "content": None, "function_call": {"name": "read", "arguments": ""}}),
        chunk({"function_call": {"arguments": '{"path": '}}),
        chunk({"function_call": {"arguments": '"a.txt"}'}}),
        chunk({}, "function_call"),
    )
    judged: list[ToolCall] = []
    out, _ = run(stream, lambda call, pos: judged.append(call) or True)
    message = accumulate(out).choices[0].message
    assert (message.function_call.name, message.function_call.arguments) == ("read", ARGS_A)
    assert judged == [ToolCall("", "read", ARGS_A)]
    rejected, filt = run(stream, lambda call, pos: False)
    assert b"function_call" not in rejected and filt.round.rejected == ToolCall("", "read", ARGS_A)


RECORDED = sse(
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Let me look. "}),
    tools(tc(0, "call_a", "read", ""), content="Reading é"),
    *[tools(tc(0, args=ARGS_A[i : i + 4])) for i in range(0, len(ARGS_A), 4)],
    tools(tc(1, "call_b", "search", "")),
    *[tools(tc(1, args=ARGS_B[i : i + 3])) for i in range(0, len(ARGS_B), 3)],
    FINISH,
    {**ENV, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
    eol="\r\n",
)


def test_recorded_stream_at_every_split_point() -> None:
    whole, _ = run(RECORDED)
    completion = accumulate(whole)
    assert calls_of(completion) == TWO
    assert completion.choices[0].message.content == "Let me look. Reading é"
    assert completion.usage.total_tokens == 15
    chunks = client_chunks(whole)
    for cut in range(len(RECORDED) + 1):
        out, _ = run([RECORDED[:cut], RECORDED[cut:]])
        assert out == whole or client_chunks(out) == chunks, cut  # the same bytes are the same chunks
    one_byte, _ = run([RECORDED[i : i + 1] for i in range(len(RECORDED))])
    assert client_chunks(one_byte) == client_chunks(whole)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(RECORDED)), max_size=12))
def test_recorded_stream_any_chunking(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [RECORDED[a:b] for a, b in zip([0, *points], [*points, len(RECORDED)])]
    out, _ = run(pieces)
    assert calls_of(accumulate(out)) == TWO


def test_content_goes_out_before_the_held_call_completes() -> None:
    filt = chat_filter(lambda call, pos: True)
    assert filt.feed(sse(ROLE, done=False)) == [sse(ROLE, done=False)]  # untouched bytes
    held = filt.feed(sse(tools(tc(0, "call_a", "read", '{"pa')), done=False))
    assert held == []
    early = filt.feed(sse(tools(tc(0, args='th": "a.txt"}'), content="thinking"), done=False))
    assert [c["choices"][0]["delta"] for c in client_chunks(b"".join(early))] == [{"content": "thinking"}]
    later = filt.feed(sse(FINISH))
    assert tool_entries(b"".join(later)) == [tc(0, "call_a", "read", '{"pa'), tc(0, args='th": "a.txt"}')]
    assert b"".join(later).startswith(sse(tools(tc(0, "call_a", "read", '{"pa')), done=False))  # as it came
    # Every call judged and kept: nothing can follow, so [DONE] goes out with the read, once.
    assert b"".join(later).endswith(DONE) and filt.final() == []


def test_stream_without_tool_calls_is_relayed_byte_for_byte() -> None:
    stream = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hello"}),
        ": keep-alive",
        chunk({}, "stop"),
        {**ENV, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
    ).replace(b"data: : keep-alive", b": keep-alive")
    filt = chat_filter(lambda call, pos: pytest.fail("no call to judge"))
    relayed = filt.feed(stream) + filt.end_upstream()
    assert b"".join(relayed) == stream  # no call: [DONE] goes out as it came
    assert b"".join(relayed + filt.final()) == stream
    assert filt.final() == []  # [DONE] exactly once


def test_done_waits_while_a_call_is_open_or_was_dropped() -> None:
    open_call = chat_filter(lambda call, pos: True)  # no finish: the call ends with the stream
    out = open_call.feed(sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A))))
    assert DONE not in b"".join(out)
    assert b"".join(open_call.end_upstream() + open_call.final()).endswith(DONE)
    dropped = chat_filter(lambda call, pos: pos == 0)
    out = dropped.feed(
        sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A)), tools(tc(1, "call_b", "search", ARGS_B)), FINISH)
    )
    assert DONE not in b"".join(out + dropped.end_upstream())  # the pipeline says what follows
    assert dropped.final()[-1] == DONE


def test_partial_keep_drops_the_rejected_call_and_all_after_it() -> None:
    stream = sse(
        ROLE,
        tools(tc(0, "call_a", "read", ARGS_A)),
        tools(tc(1, "call_b", "search", ARGS_B)),
        tools(tc(2, "call_c", "read", ARGS_A)),
        FINISH,
    )
    judged: list[str] = []
    out, filt = run(stream, lambda call, pos: judged.append(call.id) or call.id != "call_b")
    completion = accumulate(out)
    assert calls_of(completion) == [("call_a", "read", ARGS_A)]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert judged == ["call_a", "call_b"]  # the round is aborted: call_c is never judged
    state = filt.round
    assert state.rejected == ToolCall("call_b", "search", ARGS_B) and state.rejected_position == 1
    assert [c.id for c in state.kept] == ["call_a"] and [c.id for c in state.dropped] == ["call_b", "call_c"]
    assert not filt.needs_decision


def test_rejected_first_call_emits_nothing_tool_related() -> None:
    stream = sse(
        ROLE,
        chunk({"content": "Checking."}),
        tools(tc(0, "call_a", "read", ARGS_A)),
        tools(tc(1, "call_b", "search", ARGS_B)),
        FINISH,
    )
    filt = chat_filter(lambda call, pos: False)
    out = b"".join(filt.feed(stream) + filt.end_upstream())
    assert b"tool_calls" not in out and b'finish_reason":"' not in out and DONE not in out
    assert filt.needs_decision and filt.round.finish_withheld and filt.round.finish_reason == "tool_calls"
    assert filt.round.rejected == ToolCall("call_a", "read", ARGS_A) and filt.round.rejected_position == 0
    assert [c.id for c in filt.round.dropped] == ["call_a", "call_b"] and filt.round.kept == []
    # the pipeline chooses to terminate
    out += b"".join(filt.terminate("Stopped: read looped 5 times.") + filt.final())
    completion = accumulate(out)
    choice = completion.choices[0]
    assert choice.message.content == "Checking.Stopped: read looped 5 times."
    assert choice.message.tool_calls is None and choice.finish_reason == "stop"
    assert out.endswith(DONE) and out.count(DONE) == 1


def _continuation(first: bytes, second: bytes, judge) -> tuple[bytes, ToolCallFilter]:
    filt = chat_filter(judge)
    out = filt.feed(first) + filt.end_upstream()
    assert filt.needs_decision
    filt.begin_continuation()
    out += filt.feed(second) + filt.end_upstream() + filt.final()
    return b"".join(out), filt


USAGE1 = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
USAGE2 = {"prompt_tokens": 130, "completion_tokens": 10, "total_tokens": 140}
USAGE1["prompt_tokens_details"] = {"cached_tokens": 64}
USAGE2["prompt_tokens_details"] = {"cached_tokens": 100}


def test_reask_continues_the_same_client_stream() -> None:
    first = sse(
        chunk({"role": "assistant", "content": "Let me retry. "}),
        tools(tc(0, "call_a", "read", ARGS_A)),
        FINISH,
        {**ENV, "choices": [], "usage": USAGE1},
    )
    second = sse(
        chunk({"role": "assistant", "content": ""}, env=ENV2),
        chunk({"content": "Trying search."}, env=ENV2),
        {**tools(tc(0, "call_z", "search", ARGS_B)), **ENV2},
        chunk({}, "tool_calls", env=ENV2),
        {**ENV2, "choices": [], "usage": USAGE2},
    )
    out, filt = _continuation(first, second, lambda call, pos: call.id != "call_a")
    chunks = client_chunks(out)
    roles = [c for c in chunks for ch in c["choices"] if "role" in ch["delta"]]
    assert len(roles) == 1  # no second role delta
    assert {c["id"] for c in chunks} == {ENV["id"]} and {c["created"] for c in chunks} == {ENV["created"]}
    completion = accumulate(out)
    assert completion.choices[0].message.content == "Let me retry. Trying search."
    assert calls_of(completion) == [("call_z", "search", ARGS_B)]
    assert [e["index"] for e in tool_entries(out)] == [0]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage.total_tokens == 260 and completion.usage.prompt_tokens_details.cached_tokens == 164
    assert [len(r.dropped) for r in filt.rounds] == [1, 0] and [len(r.kept) for r in filt.rounds] == [0, 1]
    assert out.count(DONE) == 1 and out.endswith(DONE)


def test_second_veto_then_terminate() -> None:
    first = sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A)), FINISH)
    second = sse(
        {**tools(tc(0, "call_b", "read", ARGS_A), role="assistant", content=None), **ENV2},
        chunk({}, "tool_calls", env=ENV2),
    )
    filt = chat_filter(lambda call, pos: False)
    out = filt.feed(first) + filt.end_upstream()
    filt.begin_continuation()
    out += filt.feed(second) + filt.end_upstream()
    assert filt.needs_decision and filt.round.rejected == ToolCall("call_b", "read", ARGS_A)
    out += filt.terminate("Stopped.") + filt.final()
    assert not filt.needs_decision
    completion = accumulate(b"".join(out))
    assert completion.choices[0].message.tool_calls is None
    assert (completion.choices[0].message.content, completion.choices[0].finish_reason) == ("Stopped.", "stop")
    deltas = [c["choices"][0]["delta"] for c in client_chunks(b"".join(out)) if c["choices"]]
    assert len([d for d in deltas if "role" in d]) == 1


def test_final_without_a_decision_still_finishes_the_stream() -> None:
    out, filt = run(sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A)), FINISH), lambda call, pos: False)
    assert not filt.needs_decision and filt.round.all_dropped
    completion = accumulate(out)
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].finish_reason == "stop"  # never a stream without a finish


def test_continuation_indices_follow_earlier_kept_calls() -> None:
    filt = chat_filter(lambda call, pos: call.id != "call_b")
    calls = tools(tc(0, "call_a", "read", ARGS_A)), tools(tc(1, "call_b", "read", ARGS_A))
    out = filt.feed(sse(ROLE, *calls, done=False))
    out += filt.end_upstream()
    filt.begin_continuation()  # a pipeline may choose this even after a partial keep
    out += filt.feed(sse({**tools(tc(0, "call_c", "search", ARGS_B)), **ENV2}, chunk({}, "tool_calls", env=ENV2)))
    out += filt.final()
    assert [e["index"] for e in tool_entries(b"".join(out))] == [0, 1]
    assert [c[0] for c in calls_of(accumulate(b"".join(out)))] == ["call_a", "call_c"]


def test_error_event_mid_stream_passes_untouched() -> None:
    error = data_event({"error": {"message": "overloaded", "type": "server_error", "param": None, "code": None}})
    filt = chat_filter(lambda call, pos: True)
    out = filt.feed(sse(ROLE, tools(tc(0, "call_a", "read", '{"pa')), done=False) + error)
    assert out[-1] == error
    named = b'event: error\ndata: {"message": "x"}\n\n'
    assert filt.feed(named) == [named]


def test_judge_exception_fails_open() -> None:
    def broken(call: ToolCall, pos: int) -> bool:
        raise RuntimeError("detector bug")

    out, filt = run(sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A)), FINISH), broken)
    assert calls_of(accumulate(out)) == ONE
    assert [type(e) for e in filt.round.judge_errors] == [RuntimeError]


@pytest.mark.parametrize(
    "choices",
    [
        pytest.param([{"index": 1, "delta": {"tool_calls": [tc(0, "call_x", "read", ARGS_A)]}}], id="index-1"),
        pytest.param([{"index": "0", "delta": {"tool_calls": [tc(0, "call_x", "read", ARGS_A)]}}], id="index-string"),
        pytest.param(
            [{"index": 0, "delta": {}}, {"index": 0, "delta": {"tool_calls": [tc(0, "call_x", "read", ARGS_A)]}}],
            id="two-at-index-0",
        ),
        pytest.param(
            [{"index": 0, "delta": {}}, {"index": 1, "delta": {"tool_calls": [tc(0, "call_x", "read", ARGS_A)]}}],
            id="a-second-answer",
        ),
        pytest.param(["tool_calls"], id="not-an-object"),
    ],
)
def test_a_choice_the_request_did_not_ask_for_ends_the_stream(choices) -> None:
    """One answer asked for (no ``n``): agents read ``choices[0]`` whatever its index, and the
    SDK's accumulator merges choices by index, so a call in any other choice would pass
    unjudged. The stream ends there with an error chunk, the call never sent."""
    judged: list[str] = []
    chunk = {**ENV, "choices": choices}
    out, filt = run(sse(ROLE, chunk, FINISH), lambda call, pos: judged.append(call.id) or True)
    assert judged == [] and b"call_x" not in out and filt.failure is not None
    assert b'"code":"upstream_invalid_stream"' in out and out.endswith(b"data: [DONE]\n\n")


def test_interleaved_deltas_still_reach_the_client_whole() -> None:
    # No known provider interleaves; the judge then sees the call as it was when the next started.
    stream = sse(
        ROLE,
        tools(tc(1, "call_a", "read", '{"path": ')),
        tools(tc(2, "call_b", "search", ARGS_B)),
        tools(tc(1, args='"a.txt"}')),
        FINISH,
    )
    judged: list[ToolCall] = []
    out, filt = run(stream, lambda call, pos: judged.append(call) or True)
    assert calls_of(accumulate(out)) == TWO
    assert judged[0].arguments == '{"path": ' and filt.round.interleaved


def test_usage_on_the_finish_chunk_stays_on_the_last_chunk() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    last = tools(tc(0, args='"}'))
    last["choices"][0]["finish_reason"] = "tool_calls"
    last["usage"] = usage
    out, _ = run(sse(ROLE, tools(tc(0, "call_a", "read", '{"path": "a.txt')), last))
    completion = accumulate(out)
    assert completion.usage.total_tokens == 7 and calls_of(completion) == ONE
    assert client_chunks(out)[-1]["usage"] == usage


def test_extra_fields_of_a_call_survive_renumbering() -> None:
    entry = {**tc(1, "call_a", "read", ARGS_A), "extra_content": {"google": {"thought_signature": "sig"}}}
    out, _ = run(sse(ROLE, tools(entry), FINISH))
    assert tool_entries(out) == [{**entry, "index": 0}]


def test_held_role_goes_out_before_later_content() -> None:
    first = tools(tc(0, "call_a", "read", '{"path"'), role="assistant", content=None)
    filt = chat_filter(lambda call, pos: True)
    assert filt.feed(sse(first, done=False)) == []  # the role waits with its tool call
    out = filt.feed(sse(chunk({"content": "hm"}), done=False))
    deltas = [c["choices"][0]["delta"] for c in client_chunks(b"".join(out))]
    assert deltas == [{"role": "assistant", "content": None}, {"content": "hm"}]
    out += filt.feed(sse(tools(tc(0, args=': "a.txt"}')), FINISH)) + filt.final()
    completion = accumulate(b"".join(out))
    assert calls_of(completion) == ONE and completion.choices[0].message.content == "hm"
    assert completion.choices[0].message.role == "assistant"


def test_role_reaches_the_client_when_its_call_is_dropped() -> None:
    filt = chat_filter(lambda call, pos: False)
    first = tools(tc(0, "call_a", "read", ARGS_A), role="assistant", content=None)
    out = filt.feed(sse(first, FINISH)) + filt.end_upstream()
    assert [c["choices"][0]["delta"] for c in client_chunks(b"".join(out))] == [{"role": "assistant", "content": None}]
    assert filt.needs_decision


def test_mixed_content_and_rejected_call_in_one_delta() -> None:
    mixed = tools(tc(0, "call_a", "read", ARGS_A), content="Let me read.")
    out, filt = run(sse(ROLE, mixed, FINISH), lambda call, pos: False)
    assert b"tool_calls" not in out and accumulate(out).choices[0].message.content == "Let me read."
    assert filt.round.rejected is not None


@pytest.mark.parametrize("keepalive,expected", [(0.0, 2), (None, 0), (3600.0, 0)])
def test_keepalive_comments_while_a_call_is_held(keepalive: float | None, expected: int) -> None:
    filt = chat_filter(lambda call, pos: True, keepalive_s=keepalive)
    out = filt.feed(
        sse(
            ROLE,
            tools(
                tc(0, "call_a", "read", ""),
            ),
            done=False,
        )
    )
    out += filt.feed(sse(tools(tc(0, args="{")), done=False)) + filt.feed(sse(tools(tc(0, args="}")), done=False))
    assert out.count(b": loopguard holding\n\n") == expected
    out += filt.feed(sse(FINISH)) + filt.final()
    assert calls_of(accumulate(b"".join(out))) == [("call_a", "read", "{}")]


def test_chunk_helpers_make_valid_chunks() -> None:
    env = Envelope.from_chunk(ENV)
    chunks = content_chunk(env, "Hi", role=True), content_chunk(env, "!"), finish_chunk(env, "stop")
    stream = b"".join(data_event(c) for c in chunks)
    completion = accumulate(stream + DONE)
    envelope = completion.id, completion.model, completion.system_fingerprint
    assert envelope == (ENV["id"], ENV["model"], ENV["system_fingerprint"])
    assert completion.choices[0].message.content == "Hi!" and completion.choices[0].finish_reason == "stop"
    assert orjson.loads(data_event(finish_chunk(env, "stop"))[6:])["object"] == "chat.completion.chunk"


def test_null_tool_calls_in_content_deltas_are_relayed_untouched() -> None:
    stream = sse(
        chunk({"role": "assistant", "content": "", "tool_calls": None}),
        chunk({"content": "Hi", "tool_calls": None}),
        chunk({}, "stop"),
    )
    out, _ = run(stream)
    assert out == stream


def test_continuation_keeps_chunks_without_choices() -> None:
    filters = {**ENV2, "object": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]}
    first = sse(ROLE, tools(tc(0, "call_a", "read", ARGS_A)), FINISH)
    second = sse(filters, chunk({"role": "assistant", "content": "ok"}, env=ENV2), chunk({}, "stop", env=ENV2))
    out, _ = _continuation(first, second, lambda call, pos: call.id != "call_a")
    bodies = client_chunks(out)
    assert [b["prompt_filter_results"] for b in bodies if "prompt_filter_results" in b] == [[{"prompt_index": 0}]]
    assert accumulate(out).choices[0].message.content == "ok"


def test_content_events_are_relayed_as_the_same_bytes_as_they_arrive() -> None:
    filt = chat_filter(lambda call, pos: True)
    events = [sse(c, done=False) for c in (ROLE, chunk({"content": "a"}), chunk({"content": "b"}), chunk({}, "stop"))]
    split = events[2][:10], events[2][10:]
    assert filt.feed(events[0]) == [events[0]]
    assert filt.feed(events[1]) == [events[1]]
    assert filt.feed(split[0]) == [] and filt.feed(split[1]) == [events[2]]
    assert b"".join(filt.feed(events[3] + b": ping\n\n")) == events[3] + b": ping\n\n"  # one write either way
    assert filt.feed(DONE) == [DONE] and filt.final() == []  # no call held: nothing can follow it


def test_empty_tool_call_lists_with_content_are_relayed_untouched() -> None:
    stream = sse(
        chunk({"role": "assistant", "content": "", "tool_calls": []}),
        chunk({"content": "Hi", "tool_calls": []}),
        chunk({}, "stop"),
    )
    out, _ = run(stream)
    assert out == stream


def test_terminate_mid_stream_drops_what_is_held() -> None:
    judged: list[str] = []
    filt = chat_filter(lambda call, pos: judged.append(call.id) or True)
    out = filt.feed(sse(ROLE, tools(tc(0, "call_a", "read", '{"pa')), done=False))
    out += filt.terminate("Stopped.") + filt.final()
    completion = accumulate(b"".join(out))
    assert judged == [] and completion.choices[0].message.tool_calls is None
    assert (completion.choices[0].message.content, completion.choices[0].finish_reason) == ("Stopped.", "stop")
