"""The Converse stream filter over real event-stream frames: a healthy stream byte for byte, a
refused call dropped with its round and later blocks renumbered, an all-refused round withheld
for a re-ask that continues the same message or a termination, a refused round's words never
shown while text is held; every client stream read back by botocore."""

from __future__ import annotations

import pytest
from support.converse_frames import stream_events
from support.converse_upstream import Said, event

from gateway.protocols.base import StreamOptions
from gateway.protocols.converse.protocol import ADAPTER as CONVERSE
from gateway.protocols.converse.tokens import output_tokens

CALLS = [("list_dir", {"path": "."}), ("read_file", {"path": "a.txt"})]


def judge_refusing(*names: str):
    return lambda call, position: call.name not in names


def filtered(judge, data: bytes, options: StreamOptions | None = None, step: int = 7):
    filt = CONVERSE.streams.filter(judge, {}, options)
    out = [piece for at in range(0, len(data), step) for piece in filt.feed(data[at : at + step])]
    return filt, out + filt.end_upstream()


def blocks(events: list[dict]) -> list[tuple[int, str]]:
    """(client index, what) per block event: the text, a call's name, or ``stop``."""
    out = []
    for each in events:
        ((name, data),) = each.items()
        if name == "contentBlockStart":
            out.append((data["contentBlockIndex"], data["start"]["toolUse"]["name"]))
        elif name == "contentBlockDelta" and "text" in data["delta"]:
            out.append((data["contentBlockIndex"], data["delta"]["text"]))
        elif name == "contentBlockStop":
            out.append((data["contentBlockIndex"], "stop"))
    return out


@pytest.mark.parametrize("step", [1, 7, 10_000])
def test_a_healthy_stream_goes_out_byte_for_byte_whatever_the_reads(step):
    data = b"".join(Said(text="Reading both files.", calls=CALLS).events(["t1", "t2"]))
    filt, out = filtered(judge_refusing(), data, step=step)
    assert b"".join(out + filt.final()) == data and filt.complete and not filt.needs_decision


def test_a_refused_call_is_dropped_and_the_blocks_after_it_are_renumbered():
    calls = [("read_file", {"path": "a.txt"}), ("list_dir", {"path": "."})]
    data = b"".join(Said(text="Reading.", calls=calls).events(["t1", "t2"]))
    filt, out = filtered(judge_refusing("list_dir"), data)
    events = stream_events(b"".join(out + filt.final()))
    assert blocks(events) == [(0, "Reading."), (0, "stop"), (1, "read_file"), (1, "stop")]
    names = [data["start"]["toolUse"]["name"] for e in events for n, data in e.items() if n == "contentBlockStart"]
    assert names == ["read_file"] and filt.round.rejected.name == "list_dir"
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"


def test_a_block_after_a_dropped_one_takes_the_next_client_index():
    """The first call refused drops every later call of the round; a text block after the
    calls keeps its place in the client's count."""
    said = Said(text="Reading.", calls=CALLS).events(["t1", "t2"])
    renumbered = [
        event("contentBlockDelta", {"contentBlockIndex": 3, "delta": {"text": "Then done."}}),
        event("contentBlockStop", {"contentBlockIndex": 3}),
    ]
    data = b"".join([*said[:-2], *renumbered, *said[-2:]])
    filt, out = filtered(judge_refusing("list_dir"), data)
    events = stream_events(b"".join(out + filt.final()))
    assert blocks(events) == [(0, "Reading."), (0, "stop"), (1, "Then done."), (1, "stop")]


def test_an_all_refused_round_is_withheld_and_a_reask_continues_the_same_message():
    first = b"".join(Said(calls=[CALLS[1]]).events(["t1"]))
    filt, out = filtered(judge_refusing("read_file"), first)
    assert filt.needs_decision
    filt.begin_continuation()
    again = b"".join(Said(text="Listing instead.", calls=[CALLS[0]]).events(["t2"]))
    out += [piece for piece in filt.feed(again)] + filt.end_upstream() + filt.final()
    events = stream_events(b"".join(out))
    assert [next(iter(e)) for e in events].count("messageStart") == 1
    assert blocks(events) == [(0, "Listing "), (0, "instead."), (0, "stop"), (1, "list_dir"), (1, "stop")]
    assert events[-1]["metadata"]["usage"] == {"inputTokens": 200, "outputTokens": 40, "totalTokens": 240}
    assert output_tokens(b"".join(out)) == 40


def test_a_terminated_stream_ends_with_the_text_end_turn_and_usage():
    filt, out = filtered(judge_refusing("read_file"), b"".join(Said(text="Again.", calls=[CALLS[1]]).events(["t1"])))
    out += filt.terminate("Stopped: a loop.") + filt.final()
    events = stream_events(b"".join(out))
    assert blocks(events) == [(0, "Again."), (0, "stop"), (1, "Stopped: a loop."), (1, "stop")]
    assert events[-2] == {"messageStop": {"stopReason": "end_turn"}}
    assert events[-1]["metadata"]["usage"]["outputTokens"] == 20
    answer = CONVERSE.streams.answer(b"".join(out))
    assert answer is not None and answer.text == "Again.Stopped: a loop." and not answer.calls


def test_held_words_of_a_refused_round_are_never_shown():
    hold = StreamOptions(keepalive_s=None, hold_text=True)
    data = b"".join(Said(text="Let me read a.txt again.", calls=[CALLS[1]]).events(["t1"]))
    filt, out = filtered(judge_refusing("read_file"), data, hold)
    assert out == [b for b in out if b.startswith(b"\x00")] and filt.needs_decision
    out += filt.terminate("Stopped.") + filt.final()
    assert blocks(stream_events(b"".join(out))) == [(0, "Stopped."), (0, "stop")]
    kept, out = filtered(judge_refusing(), data, hold)
    assert b"".join(out + kept.final()) == data


def test_a_stream_cut_mid_block_is_closed_before_its_end():
    frames = Said(text="Half an answer", calls=[CALLS[1]]).events(["t1"])
    filt = CONVERSE.streams.filter(judge_refusing(), {}, None)
    out = filt.feed(b"".join(frames[:2]))  # messageStart and one text delta
    out += filt.cut(b"") + filt.terminate("Cut off.") + filt.final()
    assert blocks(stream_events(b"".join(out))) == [(0, "Half an "), (0, "stop"), (1, "Cut off."), (1, "stop")]


def test_text_put_before_a_streamed_answer_shifts_its_blocks():
    data = b"".join(Said(text="Done.").events([]))
    events = stream_events(CONVERSE.streams.prepend_text(data, "[LoopGuard] note"))
    assert blocks(events) == [(0, "[LoopGuard] note\n\n"), (0, "stop"), (1, "Done."), (1, "stop")]
