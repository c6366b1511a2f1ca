"""AWS event streams (``application/vnd.amazon.eventstream``): the binary frames Bedrock streams
in, read as the events a stream filter reads (``SSEEvent``) and written back as frames.

A frame is a 12-byte prelude (total length, headers length, prelude CRC32), typed headers
(``:message-type``, ``:event-type``, ``:content-type``), the payload and a CRC32 of it all.
Frames are told apart by their length; each is parsed and checked by botocore's own decoder.
botocore ships no encoder, so ``frame`` writes the few string-header frames the gateway sends
itself (its termination and error events), and the tests read each back with botocore.

Rule: a frame that cannot be read (a bad checksum, a length no frame has) ends the reading: it
and everything after it are passed on as they came, one unread event, never judged.
"""

from __future__ import annotations

import binascii
import struct

from botocore.eventstream import EventStreamBuffer, ParserError

from gateway.protocols.sse import SSEEvent

__all__ = ["CONTENT_TYPE", "FrameDecoder", "frame"]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_PRELUDE = 12
_MAX_FRAME = 24 * 1024 * 1024  # botocore's own limit on one message (payload 16 MiB + headers)
_NAME_KEYS = (":event-type", ":exception-type", ":error-code")


class FrameDecoder:
    """Splits an event-stream byte stream into its frames, whatever the read boundaries: each
    an ``SSEEvent`` with the frame's bytes (``raw``), its payload as text (``data``) and its
    event, exception or error name (``event``)."""

    __slots__ = ("_broken", "_buf")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._broken = False

    def feed(self, data: bytes) -> list[SSEEvent]:
        if self._broken:
            return [SSEEvent(raw=data, terminated=False)] if data else []
        self._buf += data
        events: list[SSEEvent] = []
        while len(self._buf) >= _PRELUDE:
            total = int.from_bytes(self._buf[:4], "big")
            if total < _PRELUDE + 4 or total > _MAX_FRAME:
                return [*events, self._give_up()]
            if len(self._buf) < total:
                break
            raw = bytes(self._buf[:total])
            event = _read(raw)
            if event is None:
                return [*events, self._give_up()]
            del self._buf[:total]
            events.append(event)
        return events

    def flush(self) -> list[SSEEvent]:
        """The stream ended: an unfinished frame is passed on as it came."""
        rest, self._buf = bytes(self._buf), bytearray()
        return [SSEEvent(raw=rest, terminated=False)] if rest else []

    def _give_up(self) -> SSEEvent:
        self._broken = True
        rest, self._buf = bytes(self._buf), bytearray()
        return SSEEvent(raw=rest, terminated=False)


def _read(raw: bytes) -> SSEEvent | None:
    buffer = EventStreamBuffer()
    buffer.add_data(raw)
    try:
        message = next(iter(buffer))
    except (ParserError, StopIteration):
        return None
    headers: dict[str, object] = message.headers  # type: ignore[assignment]  # the stubs say int
    name = next((value for key in _NAME_KEYS if isinstance(value := headers.get(key), str)), None)
    return SSEEvent(raw=raw, data=bytes(message.payload).decode("utf-8", "replace"), event=name)


def frame(event: str, payload: bytes, message_type: str = "event") -> bytes:
    """One frame: ``payload`` as event ``event`` (``message_type`` "exception": as exception
    ``event``), JSON content."""
    key = ":exception-type" if message_type == "exception" else ":event-type"
    headers = b"".join(
        _header(name, value)
        for name, value in ((key, event), (":content-type", "application/json"), (":message-type", message_type))
    )
    total = _PRELUDE + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", binascii.crc32(message))


def _header(name: str, value: str) -> bytes:
    """A string header (type 7): name length, name, type, value length, value."""
    key, text = name.encode(), value.encode()
    return bytes([len(key)]) + key + b"\x07" + struct.pack(">H", len(text)) + text
