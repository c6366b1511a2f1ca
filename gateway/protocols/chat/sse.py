"""Server-sent events: an incremental decoder that keeps each event's exact bytes, and encoders.

The gateway relays most events untouched, so every decoded event carries the raw bytes it was
decoded from (terminating blank line included); concatenating the ``raw`` of all events returned
by :meth:`SSEDecoder.feed` and :meth:`SSEDecoder.flush` gives back exactly the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

__all__ = ["DONE", "SSEDecoder", "SSEEvent", "comment", "data_event"]

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
    """Splits an SSE byte stream into events, whatever the chunk boundaries and line endings."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._line_start = 0  # start in _buf of the line being read
        self._scan_from = 0  # no line ending exists in _buf[_line_start:_scan_from]
        self._skip_lf = False  # the last line ended with a CR at the end of a chunk
        self._reset_fields()

    def _reset_fields(self) -> None:
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._comments: list[str] = []
        self._has_fields = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buf
        buf += chunk
        pos = self._line_start
        if self._skip_lf and len(buf) > pos:
            # "\r" then "\n" in the next chunk is one line ending, not an extra blank line.
            self._skip_lf = False
            if buf[pos] == _LF:
                pos += 1
        events: list[SSEEvent] = []
        event_start = 0
        scan = max(pos, self._scan_from)
        end_of_buf = len(buf)
        while True:
            match = _EOL.search(buf, scan)
            if match is None:
                break
            end, nxt = match.span()
            if nxt == end_of_buf and nxt - end == 1 and buf[end] == _CR:
                self._skip_lf = True
            line = buf[pos:end]
            pos = scan = nxt
            if line:
                self._field(line)
            elif self._has_fields:
                events.append(self._dispatch(bytes(buf[event_start:pos]), True))
                event_start = pos
        # Keep only the unfinished event: its bytes are still needed for its raw.
        del buf[:event_start]
        self._line_start = pos - event_start
        self._scan_from = len(buf)
        return events

    def flush(self) -> list[SSEEvent]:
        """The stream ended: return what is left (an event missing its blank line, stray bytes)."""
        buf = self._buf
        if not buf:
            return []
        tail = bytes(buf[self._line_start:]).rstrip(b"\r\n")
        if tail:
            self._field(tail)
        event = self._dispatch(bytes(buf), False)
        buf.clear()
        self._line_start = self._scan_from = 0
        self._skip_lf = False
        return [event]

    def _field(self, line: bytes | bytearray) -> None:
        # A line ending can't fall inside a UTF-8 sequence, so each line decodes on its own.
        text = line.decode("utf-8", "replace")
        self._has_fields = True
        if text[0] == ":":
            self._comments.append(text[1:].removeprefix(" "))
            return
        name, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value

    def _dispatch(self, raw: bytes, terminated: bool) -> SSEEvent:
        event = SSEEvent(
            raw=raw,
            data="\n".join(self._data) if self._data else None,
            event=self._event,
            id=self._id,
            comments=tuple(self._comments),
            terminated=terminated,
        )
        self._reset_fields()
        return event


def data_event(payload: dict | list | str) -> bytes:
    """One ``data:`` event; a string with line breaks becomes several data lines."""
    if isinstance(payload, str):
        body = payload.encode()
        if b"\n" in body or b"\r" in body:
            body = b"\ndata: ".join(_EOL.split(body))
    else:
        body = orjson.dumps(payload)
    return b"data: " + body + b"\n\n"


def comment(text: str, prefix: str = "loopguard") -> bytes:
    """A comment line (``: loopguard ...``): SSE clients ignore it, humans and logs can read it."""
    flat = " ".join(text.splitlines())
    return f": {prefix} {flat}\n\n".encode() if prefix else f": {flat}\n\n".encode()
