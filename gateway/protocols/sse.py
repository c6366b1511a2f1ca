"""Server-sent events: an incremental decoder that keeps each event's exact bytes, and encoders.

The gateway relays most events untouched, so every decoded event carries the raw bytes it was
decoded from (terminating blank line included); concatenating the ``raw`` of all events returned
by :meth:`SSEDecoder.feed` and :meth:`SSEDecoder.flush` gives back exactly the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from gateway.wire import codec

__all__ = [
    "DONE",
    "SSEDecoder",
    "SSEEvent",
    "comment",
    "data_event",
    "event_of",
    "json_events",
    "whole_events",
    "whole_parts",
]

DONE = b"data: [DONE]\n\n"

# Compiled once: the decoder runs on every upstream byte.
_EOL = re.compile(rb"\r\n|\r|\n")
_CR = 13
_LF = 10


@dataclass(slots=True)
class SSEEvent:
    raw: bytes
    data: str | None = None  # data lines joined with "\n"; None when the event had no data field
    event: str | None = None
    id: str | None = None
    comments: tuple[str, ...] = ()
    terminated: bool = True  # False for a trailing event the stream ended without a blank line

    @property
    def is_done(self) -> bool:
        return self.data == "[DONE]"


class SSEDecoder:
    """Splits an SSE byte stream into events, whatever the chunk boundaries and line endings.

    Lines are parsed only once their event is complete, so the only state between chunks is the
    unfinished event's bytes and where scanning resumes. Streams without CR (nearly all) are
    scanned with ``bytes.find``; the general path handles CR and CRLF.
    """

    def __init__(self) -> None:
        self._buf = bytearray()  # the unfinished event's bytes
        self._scan = 0  # a line start in _buf: everything before it has been scanned
        self._content = False  # the unfinished event has a non-empty line
        self._skip_lf = False  # the last line ended with a CR at the end of a chunk
        self._seen = 0  # no blank line starts in _buf before this: a long line isn't rescanned

    @property
    def idle(self) -> bool:
        """Between events: the next byte starts a new event."""
        return not self._buf and not self._skip_lf

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf: bytes | bytearray
        if self._buf:
            buf = self._buf
            buf += chunk
        else:  # the usual case, whole events per chunk: slice the chunk itself, no copy
            buf = chunk
        size, pos = len(buf), self._scan
        if self._skip_lf and pos < size:
            # "\r" then "\n" in the next chunk is one line ending, not an extra blank line.
            self._skip_lf = False
            pos += buf[pos] == _LF
        events: list[SSEEvent] = []
        start = 0
        lf_only = buf.find(b"\r", max(pos, self._seen)) < 0
        while pos < size:
            if lf_only:
                if buf[pos] == _LF:
                    blank = pos
                else:
                    self._content = True
                    found = buf.find(b"\n\n", max(pos, self._seen))
                    if found < 0:
                        pos = buf.rfind(b"\n", max(pos, self._seen)) + 1 or pos
                        self._seen = size - 1
                        break
                    blank = found + 1
                end = blank + 1
            else:
                match = _EOL.match(buf, pos)
                if match is None:  # a non-empty line: skip to its end
                    self._content = True
                    match = _EOL.search(buf, pos)
                    if match is None:
                        break
                    pos = self._line_end(buf, match)
                    continue
                blank, end = pos, self._line_end(buf, match)
            if self._content:
                events.append(_event(bytes(buf[start:end]), blank - start, True))
                start, self._content = end, False
            pos = end
        # Keep only the unfinished event: its bytes are still needed for its raw.
        if buf is chunk:
            self._buf[:] = chunk[start:]
        else:
            del cast(bytearray, buf)[:start]
        self._scan = pos - start
        self._seen = max(self._seen - start, 0) if lf_only else 0
        return events

    def _line_end(self, buf: bytes | bytearray, match: re.Match[bytes]) -> int:
        end = match.end()
        if end == len(buf) and buf[end - 1] == _CR:
            self._skip_lf = True
        return end

    def flush(self) -> list[SSEEvent]:
        """The stream ended: return what is left (an event missing its blank line, stray bytes)."""
        buf = self._buf
        if not buf:
            return []
        event = _event(bytes(buf), len(buf), False)
        buf.clear()
        self._scan = self._seen = 0
        self._content = self._skip_lf = False
        return [event]


def whole_parts(chunk: bytes) -> list[bytes] | None:
    """The events of a chunk that holds only whole events with LF line endings and no stray
    blank lines (what upstreams send), each without its blank line, split at C speed; None for
    anything else, which the decoder reads. Read with an idle decoder only
    (``SSEDecoder.idle``): the chunk must start an event."""
    if not chunk.endswith(b"\n\n") or chunk[:1] == b"\n" or b"\n\n\n" in chunk or b"\r" in chunk:
        return None
    return chunk[:-2].split(b"\n\n")


def whole_events(chunk: bytes) -> list[bytes] | None:
    """``whole_parts``, each event with its blank line: its exact bytes."""
    parts = whole_parts(chunk)
    return None if parts is None else [part + b"\n\n" for part in parts]


def event_of(raw: bytes) -> SSEEvent:
    """The event of one raw event ``whole_events`` returned."""
    return _event(raw, len(raw) - 1, True)


def _event(raw: bytes, size: int, terminated: bool) -> SSEEvent:
    """Parse an event whose lines are ``raw[:size]`` (the rest is its blank line)."""
    if raw.startswith(b"data: ") and raw.find(b"\n", 6) == size - 1 and b"\r" not in raw:
        # The common case, one data line: no line splitting.
        return SSEEvent(raw, raw[6 : size - 1].decode("utf-8", "replace"), terminated=terminated)
    lines = raw[:size]
    data: list[str] = []
    comments: list[str] = []
    event = ident = None
    for line in lines.split(b"\n") if b"\r" not in lines else _EOL.split(lines):
        if not line:  # stray blank lines before the event
            continue
        # A line ending can't fall inside a UTF-8 sequence, so each line decodes on its own.
        text = line.decode("utf-8", "replace")
        if text[0] == ":":
            comments.append(text[1:].removeprefix(" "))
            continue
        name, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            ident = value
    joined = "\n".join(data) if data else None
    return SSEEvent(raw, joined, event, ident, tuple(comments), terminated)


def json_events(stream: bytes) -> list[tuple[bytes, dict[str, Any] | None]]:
    """A whole stream's events (an unterminated last one too), each as its raw bytes and its data
    read as a JSON object: None for a comment, ``[DONE]``, or data that is no JSON object, so a
    caller reading a complete answer skips what it cannot read and can still rewrite around it."""
    decoder = SSEDecoder()
    out = []
    for event in [*decoder.feed(stream), *decoder.flush()]:
        data = None
        if event.data is not None and not event.is_done:
            try:
                data = codec.loads(event.data)
            except codec.DecodeError:
                data = None
        out.append((event.raw, data if isinstance(data, dict) else None))
    return out


def data_event(payload: dict[str, Any] | list[Any] | str) -> bytes:
    """One ``data:`` event; a string with line breaks becomes several data lines."""
    if isinstance(payload, str):
        body = payload.encode()
        if b"\n" in body or b"\r" in body:
            body = b"\ndata: ".join(_EOL.split(body))
    else:
        body = codec.dumps(payload)
    return b"data: " + body + b"\n\n"


def comment(text: str, prefix: str = "loopguard") -> bytes:
    """A comment line (``: loopguard ...``): SSE clients ignore it, humans and logs can read it."""
    flat = " ".join(text.splitlines())
    return f": {prefix} {flat}\n\n".encode() if prefix else f": {flat}\n\n".encode()
