"""AWS event-stream frames: what the gateway writes is what botocore reads, and what botocore's
peers write is split into frames whatever the read boundaries."""

from __future__ import annotations

import pytest
from botocore.eventstream import EventStreamBuffer

from gateway.protocols.eventstream import FrameDecoder, frame

FRAMES = [
    frame("chunk", b'{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdGFydCJ9"}'),
    frame("contentBlockDelta", '{"delta":{"text":"héllo"}}'.encode()),
    frame("throttlingException", b'{"message":"slow down"}', "exception"),
]


@pytest.mark.parametrize("raw", FRAMES)
def test_botocore_reads_every_frame_the_gateway_writes(raw: bytes) -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(raw)
    (message,) = list(buffer)
    assert message.headers[":content-type"] == "application/json"
    assert message.payload == raw[-4 - len(message.payload) : -4]


@pytest.mark.parametrize("step", [1, 7, 64, 10_000])
def test_frames_are_split_whatever_the_read_boundaries(step: int) -> None:
    stream = b"".join(FRAMES)
    decoder = FrameDecoder()
    events = [e for at in range(0, len(stream), step) for e in decoder.feed(stream[at : at + step])]
    events += decoder.flush()
    assert [e.raw for e in events] == FRAMES
    assert [e.event for e in events] == ["chunk", "contentBlockDelta", "throttlingException"]
    assert events[1].data == '{"delta":{"text":"héllo"}}'


def test_a_damaged_frame_and_all_after_it_pass_as_they_came() -> None:
    damaged = bytearray(FRAMES[1])
    damaged[20] ^= 0xFF  # the message checksum no longer matches
    decoder = FrameDecoder()
    events = decoder.feed(FRAMES[0] + bytes(damaged)) + decoder.feed(FRAMES[2])
    assert events[0].raw == FRAMES[0] and events[0].event == "chunk"
    assert b"".join(e.raw for e in events[1:]) == bytes(damaged) + FRAMES[2]
    assert all(e.data is None for e in events[1:])


@pytest.mark.parametrize("junk", [b"\x00\x00\x00\x01" + b"x" * 20, b"\xff\xff\xff\xff" + b"x" * 20])
def test_a_length_no_frame_has_is_not_waited_for(junk: bytes) -> None:
    decoder = FrameDecoder()
    events = decoder.feed(junk)
    assert b"".join(e.raw for e in events) == junk


def test_an_unfinished_frame_at_the_end_is_passed_on() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(FRAMES[0][:30]) == []
    (rest,) = decoder.flush()
    assert rest.raw == FRAMES[0][:30] and rest.data is None
