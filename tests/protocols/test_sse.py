"""The SSE decoder: exact raw bytes per event, any line ending, any chunk boundary."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.protocols.sse import DONE, SSEDecoder, SSEEvent, comment, data_event, event_of, whole_events

from .chat.streams import client_events


def decode(*pieces: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [e for piece in pieces for e in decoder.feed(piece)]
    return events + decoder.flush()


def fields(events: list[SSEEvent]) -> list[tuple]:
    # A chunk boundary can leave a lone line ending for flush(): bytes kept, nothing to decode.
    return [(e.data, e.event, e.id, e.comments) for e in events if e.raw.strip(b"\r\n")]


CASES = [
    ("lf", b"data: a\n\ndata: b\n\n", [("a", None, None, ()), ("b", None, None, ())]),
    ("crlf", b"data: a\r\n\r\ndata: b\r\n\r\n", [("a", None, None, ()), ("b", None, None, ())]),
    ("cr", b"data: a\r\rdata: b\r\r", [("a", None, None, ()), ("b", None, None, ())]),
    ("mixed endings", b"data: a\r\n\ndata: b\n\r", [("a", None, None, ()), ("b", None, None, ())]),
    ("multi-line data", b'data: {"a":\ndata: 1}\n\n', [('{"a":\n1}', None, None, ())]),
    ("comment only", b": keep-alive\n\n", [(None, None, None, ("keep-alive",))]),
    ("comment inside", b": x\ndata: a\n\n", [("a", None, None, ("x",))]),
    ("event and id", b"event: error\nid: 7\ndata: e\n\n", [("e", "error", "7", ())]),
    ("no space after colon", b"data:a\n\n", [("a", None, None, ())]),
    ("two spaces keep one", b"data:  a\n\n", [(" a", None, None, ())]),
    ("bare field name", b"data\n\n", [("", None, None, ())]),
    ("leading blank lines", b"\n\n\ndata: a\n\n", [("a", None, None, ())]),
    ("unknown field ignored", b"retry: 10\nfoo: bar\ndata: a\n\n", [("a", None, None, ())]),
    ("utf-8", "data: café ✓\n\n".encode(), [("café ✓", None, None, ())]),
    ("done", DONE, [("[DONE]", None, None, ())]),
]


@pytest.mark.parametrize("stream,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decodes_fields_and_keeps_raw_bytes(stream: bytes, expected: list[tuple]) -> None:
    events = decode(stream)
    assert fields(events) == expected
    assert b"".join(e.raw for e in events) == stream
    assert all(e.terminated for e in events)


@pytest.mark.parametrize("stream", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_every_split_point_gives_the_same_events(stream: bytes) -> None:
    whole = fields(decode(stream))
    for cut in range(len(stream) + 1):
        events = decode(stream[:cut], stream[cut:])
        assert fields(events) == whole, cut
        assert b"".join(e.raw for e in events) == stream, cut
    assert fields(decode(*[stream[i : i + 1] for i in range(len(stream))])) == whole


def test_agrees_with_the_openai_sdk_decoder() -> None:
    # Without "id:": the SDK then dispatches an empty event on every later blank line.
    stream = b"".join(c[1] for c in CASES if b"id:" not in c[1])
    ours = [e.data for e in decode(stream) if e.data is not None]
    assert ours == client_events(stream)


def test_cr_at_chunk_end_then_lf_is_one_line_ending() -> None:
    decoder = SSEDecoder()
    first = decoder.feed(b"data: a\r\n\r")
    assert [e.data for e in first] == ["a"]  # dispatched without waiting for the next byte
    second = decoder.feed(b"\ndata: b\r\n\r\n")
    assert [e.data for e in second] == ["b"]
    assert decoder.flush() == []


def test_flush_returns_an_unterminated_trailing_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: tail") == [SSEEvent(raw=b"data: a\n\n", data="a")]
    assert decoder.feed(b"-more\n") == []
    (tail,) = decoder.flush()
    assert (tail.data, tail.raw, tail.terminated) == ("tail-more", b"data: tail-more\n", False)
    assert decoder.flush() == []


def test_stray_bytes_are_not_lost_at_flush() -> None:
    (event,) = decode(b"\n\n")
    assert (event.raw, event.data) == (b"\n\n", None)


def test_large_event_fed_in_small_pieces() -> None:
    payload = {"content": "x" * 100_000}
    stream = data_event(payload)
    decoder = SSEDecoder()
    events = [e for i in range(0, len(stream), 7) for e in decoder.feed(stream[i : i + 7])]
    assert [orjson.loads(e.data) for e in events] == [payload]


lines = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20)
eols = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[str]]:
    datas = draw(st.lists(st.lists(lines, min_size=1, max_size=3), max_size=6))
    out, expected = "", []
    for data in datas:
        eol = draw(eols)  # one per event: "\r" then "\n" would be a single line ending
        for line in data:
            out += "data: " + line + eol
        out += eol
        expected.append("\n".join(data))
    return out.encode(), expected


@settings(max_examples=300, deadline=None)
@given(streams(), st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_random_streams_and_splits(case: tuple[bytes, list[str]], cuts: list[int]) -> None:
    stream, expected = case
    points = sorted({min(c, len(stream)) for c in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    events = decode(*pieces)
    assert [e.data for e in events if e.data is not None] == expected
    assert b"".join(e.raw for e in events) == stream
    assert expected == client_events(stream)


@settings(max_examples=300, deadline=None)
@given(streams())
def test_whole_events_splits_as_the_decoder_does_or_leaves_the_chunk_to_it(case: tuple[bytes, list[str]]) -> None:
    stream, _ = case
    raws = whole_events(stream)
    if raws is None:
        return  # CR line endings, or nothing: the decoder's
    events = decode(stream)
    assert raws == [e.raw for e in events]
    assert [event_of(raw) for raw in raws] == events


@pytest.mark.parametrize(
    "chunk",
    [
        b"data: a\n\ndata: b",  # an event still open
        b"\ndata: a\n\n",  # a stray blank line first
        b"data: a\n\n\ndata: b\n\n",  # and between events
        b"data: a\r\n\r\n",
        b"",
    ],
)
def test_whole_events_leaves_what_is_not_whole_lf_events_to_the_decoder(chunk: bytes) -> None:
    assert whole_events(chunk) is None


ENCODE_CASES = [
    ({"a": 1, "b": "é"}, b'data: {"a":1,"b":"\xc3\xa9"}\n\n'),
    ("[DONE]", DONE),
    ("line1\nline2", b"data: line1\ndata: line2\n\n"),
]


@pytest.mark.parametrize("payload,expected", ENCODE_CASES)
def test_data_event_round_trips(payload: dict | str, expected: bytes) -> None:
    assert data_event(payload) == expected
    (event,) = decode(expected)
    assert event.data == (payload if isinstance(payload, str) else orjson.dumps(payload).decode())


def test_comment_is_one_ignored_line() -> None:
    encoded = comment("action=reject detector=exact_repeat\nsecond line")
    assert encoded == b": loopguard action=reject detector=exact_repeat second line\n\n"
    (event,) = decode(encoded)
    assert event.data is None and event.comments == ("loopguard action=reject detector=exact_repeat second line",)
    assert client_events(encoded + DONE) == ["[DONE]"]
