"""Runs of argument-only events (``{"index": k, "function": {"arguments": "..."}}``): the filter
reads the ones after the first by matching the bytes around the argument text. Whatever the
bytes, the judge sees the same call, and the client the same stream, as a full read gives."""

from __future__ import annotations

import json

import orjson
import pytest

from gateway.trace.model import ToolCall

from ..filters import chat_filter
from .streams import ENV, accumulate, calls_of, chunk, client_chunks, sse, tc, tools

pytestmark = pytest.mark.usefixtures("fast_paths")


ROLE = chunk({"role": "assistant", "content": None})
FINISH = chunk({}, "tool_calls")
TEXT = '{"path": "src/caf\u00e9.py", "note": "a \\"quoted\\" word\\nand a line", "n": 12}'


def pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def argument_run(text: str, index: int = 0, **extra) -> list[dict]:
    return [chunk({"tool_calls": [tc(index, args=part)]}, **extra) for part in pieces(text)]


def upstream(*events: dict | bytes, ascii_only: bool = False) -> bytes:
    out = b""
    for event in events:
        out += (
            event
            if isinstance(event, bytes)
            else b"data: " + json.dumps(event, ensure_ascii=ascii_only, separators=(",", ":")).encode() + b"\n\n"
        )
    return out + b"data: [DONE]\n\n"


def relay(stream: bytes, judge=None, one_event_per_read: bool = True) -> tuple[bytes, list[ToolCall]]:
    seen: list[ToolCall] = []

    def keep(call: ToolCall, position: int) -> bool:
        seen.append(call)
        return judge(call, position) if judge else True

    filt = chat_filter(keep)
    reads = [e + b"\n\n" for e in stream.split(b"\n\n") if e] if one_event_per_read else [stream]
    out = [b for read in reads for b in filt.feed(read)]
    out += filt.end_upstream() + filt.final()
    return b"".join(out), seen


START = tools(tc(0, "call_a", "write_file", ""), role="assistant", content=None)

CASES = {
    "plain run": upstream(START, *argument_run(TEXT), FINISH),
    "non-ASCII written as \\u escapes": upstream(START, *argument_run(TEXT), FINISH, ascii_only=True),
    "envelope changes mid-run": upstream(
        START,
        *argument_run(TEXT[:20]),
        *[chunk({"tool_calls": [tc(0, args=p)]}, env={**ENV, "created": 1}) for p in pieces(TEXT[20:])],
        FINISH,
    ),
    "an event with usage inside the run": upstream(
        START,
        *argument_run(TEXT[:20]),
        chunk({"tool_calls": [tc(0, args=TEXT[20:30])]}, usage=None),
        *argument_run(TEXT[30:]),
        FINISH,
    ),
    "a text that is no JSON string where the arguments were": upstream(
        START,
        *argument_run(TEXT[:10]),
        b"data: " + orjson.dumps(chunk({"tool_calls": [tc(0, args="x")]})).replace(b'"x"', b"12") + b"\n\n",
        *argument_run(TEXT[10:]),
        FINISH,
    ),
    "a second call after the run": upstream(
        START, *argument_run(TEXT), tools(tc(1, "call_b", "read_file", "")), *argument_run('{"p": 1}', 1), FINISH
    ),
}


# The SDK refuses arguments that are no string: those streams are only compared with a full read.
SDK_READABLE = [name for name in CASES if "no JSON string" not in name]


def _full_read(stream: bytes) -> list[ToolCall]:
    """The calls a plain reading of every event gives: arguments joined per index."""
    calls: dict[int, list] = {}
    for body in client_chunks(stream):
        for entry in (body["choices"][0].get("delta") or {}).get("tool_calls") or []:
            call = calls.setdefault(entry["index"], [entry.get("id", ""), "", ""])
            fn = entry.get("function") or {}
            call[1] += fn.get("name") or ""
            args = fn.get("arguments")
            call[2] += args if isinstance(args, str) else json.dumps(args) if args is not None else ""
    return [ToolCall(i, n, a) for _, (i, n, a) in sorted(calls.items())]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("per_event", [True, False], ids=["event per read", "one read"])
def test_the_judge_sees_the_calls_a_full_read_gives_and_the_client_the_same_bytes(name, per_event):
    stream = CASES[name]
    out, seen = relay(stream, one_event_per_read=per_event)
    assert seen == _full_read(stream)
    assert out == stream  # nothing vetoed: byte for byte


@pytest.mark.parametrize("name", SDK_READABLE)
def test_a_vetoed_second_call_is_cut_from_a_stream_read_that_way(name):
    stream = CASES[name]
    out, seen = relay(stream, judge=lambda call, position: position == 0)
    expected = _full_read(stream)[:1]
    assert [(c.id, c.name, c.arguments) for c in seen[:1]] == [(c.id, c.name, c.arguments) for c in expected]
    assert calls_of(accumulate(out)) == [(c.id, c.name, c.arguments) for c in expected]


def test_arguments_of_a_call_starting_at_index_1_are_renumbered_whole():
    stream = upstream(ROLE, tools(tc(1, "call_a", "write_file", "")), *argument_run(TEXT, 1), FINISH)
    out, seen = relay(stream)
    assert seen == [ToolCall("call_a", "write_file", TEXT)]
    assert calls_of(accumulate(out)) == [("call_a", "write_file", TEXT)]
    assert all(e["index"] == 0 for b in client_chunks(out) for e in b["choices"][0]["delta"].get("tool_calls", []))


def test_the_sdk_reads_the_same_completion_from_every_case():
    for name in SDK_READABLE:
        stream = CASES[name]
        out, _ = relay(stream)
        assert calls_of(accumulate(out)) == calls_of(accumulate(stream)), name


def test_streams_written_with_the_sse_helper_agree_too():
    stream = sse(START, *argument_run(TEXT), FINISH)  # json.dumps's own spacing
    out, seen = relay(stream)
    assert out == stream and seen == [ToolCall("call_a", "write_file", TEXT)]
