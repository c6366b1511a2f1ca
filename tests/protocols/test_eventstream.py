"""AWS event-stream frames: what the gateway writes is what botocore reads, and what botocore's
peers write is split into frames whatever the read boundaries."""

from __future__ import annotations

import binascii
import struct

import pytest
from botocore import eventstream as botocore_eventstream
from botocore.eventstream import EventStreamBuffer

from gateway.protocols.eventstream import BROKEN, FrameDecoder, frame

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


def frame_with(
    headers: bytes, payload: bytes = b"{}", total: int | None = None, headers_length: int | None = None
) -> bytes:
    """A frame with these raw header bytes, its checksums right (``total`` / ``headers_length``:
    what the prelude claims instead)."""
    size = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(
        ">II", size if total is None else total, len(headers) if headers_length is None else headers_length
    )
    prelude += struct.pack(">I", binascii.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", binascii.crc32(body))


def header(name: bytes, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name + bytes([kind]) + value


EVENT = header(b":event-type", 7, struct.pack(">H", 17) + b"contentBlockStart")


def damaged(at: int) -> bytes:
    raw = bytearray(FRAMES[1])
    raw[at] ^= 0xFF
    return bytes(raw)


# What botocore refuses to read as a frame: each ends the reading.
UNREADABLE = {
    "message-checksum": damaged(20),
    "prelude-checksum": damaged(9),
    "zero-length": b"\x00" * 16,
    "one-byte-length": b"\x00\x00\x00\x01" + b"x" * 20,
    "2-GiB-length": frame_with(EVENT, total=2**31),
    "4-GiB-length": b"\xff\xff\xff\xff" + b"x" * 20,
    "headers-over-128-KiB": frame_with(EVENT, headers_length=128 * 1024 + 1, total=12 + 128 * 1024 + 1 + 4),
    "headers-longer-than-frame": frame_with(EVENT, headers_length=4000),
    "unknown-header-type": frame_with(header(b":event-type", 42, b"x")),
    "header-name-not-utf8": frame_with(header(b"\xff\xfe", 7, struct.pack(">H", 1) + b"x")),
    "duplicate-header": frame_with(EVENT + EVENT),
    "payload-not-utf8": frame_with(EVENT, b"\xff\xfe"),
    "sse-instead": b'data: {"contentBlockStart": {}}\n\n' * 4,
}


@pytest.mark.parametrize("junk", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_what_botocore_refuses_ends_the_reading_with_one_broken_event(junk: bytes) -> None:
    """The frames before it are read; then one ``BROKEN`` event (its ``data`` says why) and
    nothing more, whatever follows and however it is split: a frame after the bad one is never
    found (a lenient reader could find it), and the bad bytes are never passed on."""
    for step in (1, 5, 1 << 20):
        decoder = FrameDecoder()
        stream = FRAMES[0] + junk + FRAMES[0] + FRAMES[2]
        events = [e for at in range(0, len(stream), step) for e in decoder.feed(stream[at : at + step])]
        events += decoder.flush()
        assert [e.event for e in events] == ["chunk", BROKEN], junk
        assert events[0].raw == FRAMES[0] and events[1].raw == b"" and events[1].data
        assert decoder.feed(FRAMES[2]) == [] and decoder.flush() == []


def test_botocore_agrees_with_each_refusal() -> None:
    """Each case is one botocore itself does not read (the reason the decoder refuses it, not a
    rule of its own): its decoder raises, or the payload is no UTF-8 for boto3's JSON reader."""
    for junk in UNREADABLE.values():
        buffer = EventStreamBuffer()
        buffer.add_data(junk + b"\x00" * 64)
        with pytest.raises(Exception):  # noqa: B017  # whatever botocore raises
            next(buffer).payload.decode("utf-8")


def test_a_header_botocore_reads_short_is_read_as_botocore_reads_it() -> None:
    """A string header whose length runs past the headers: botocore reads what is there; so does
    the decoder (the same frame to both)."""
    raw = frame_with(header(b":event-type", 7, struct.pack(">H", 200) + b"short"))
    (event,) = FrameDecoder().feed(raw)
    assert event.event == "short" and event.raw == raw


def test_botocores_own_limits_are_the_limits() -> None:
    """A payload of botocore's largest size (24 MiB today, 16 MiB before) with headers next to it
    is a frame boto3 reads: it is read, not passed on unread; a byte more and it is refused."""
    limit = botocore_eventstream._MAX_PAYLOAD_LENGTH  # the installed release's own limit
    payload = b'{"p":"' + b"x" * (limit - 8) + b'"}'
    raw = frame_with(EVENT, payload)
    assert len(raw) > limit
    decoder = FrameDecoder()
    (event,) = [e for at in range(0, len(raw), 1 << 16) for e in decoder.feed(raw[at : at + (1 << 16)])]
    assert event.event == "contentBlockStart" and event.raw == raw
    too_big = frame_with(EVENT, payload + b" " * 16)
    assert [e.event for e in FrameDecoder().feed(too_big[:64])] == [BROKEN]


def test_an_unfinished_frame_at_the_end_is_a_fragment() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(FRAMES[0][:30]) == []
    (rest,) = decoder.flush()
    assert rest.raw == FRAMES[0][:30] and rest.data is None and not rest.terminated
