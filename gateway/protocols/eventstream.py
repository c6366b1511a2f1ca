"""AWS event streams (``application/vnd.amazon.eventstream``): the binary frames Bedrock streams
in, read as the events a stream filter reads (``SSEEvent``) and written back as frames.

A frame is a 12-byte prelude (total length, headers length, prelude CRC32), typed headers
(``:message-type``, ``:event-type``, ``:content-type``), the payload and a CRC32 of it all.
Frames are told apart by their length; each is parsed and checked by botocore's own decoder,
under botocore's own limits (headers up to 128 KiB, payload up to 24 MiB in today's releases),
so the gateway reads exactly the frames a boto3 client reads. botocore ships no encoder, so
``frame`` writes the few string-header frames the gateway sends itself (its termination and
error events), and the tests read each back with botocore.

Rule: a frame botocore would not read (a bad checksum, a length no frame has, headers of an
unknown type, anything that is no frame at all) ends the reading: the decoder answers one
``BROKEN`` event and nothing more, and the stream filter ends the client stream with its
protocol's error frame. Passed on, the bytes after it could hold frames a lenient reader finds.
"""

from __future__ import annotations

import binascii
import struct

from botocore.eventstream import EventStreamBuffer

from gateway.protocols.sse import SSEEvent

__all__ = ["BROKEN", "CONTENT_TYPE", "FrameDecoder", "frame"]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
BROKEN = ":broken"  # the event name of what is no frame: no frame can carry a name with a colon first
_PRELUDE = 12
_NAME_KEYS = (":event-type", ":exception-type", ":error-code")


class FrameDecoder:
    """Splits an event-stream byte stream into its frames, whatever the read boundaries: each
    an ``SSEEvent`` with the frame's bytes (``raw``), its payload as text (``data``) and its
    event, exception or error name (``event``); what is no frame, one ``BROKEN`` event (its
    ``data`` says why), and nothing after it."""

    __slots__ = ("_broken", "_buf", "_total")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._broken = False
        self._total = 0  # the length of the frame being received, once its prelude was checked

    def feed(self, data: bytes) -> list[SSEEvent]:
        if self._broken:
            return []
        self._buf += data
        events: list[SSEEvent] = []
        while len(self._buf) >= _PRELUDE:
            if not self._total:
                why = _prelude_fault(bytes(self._buf[:_PRELUDE]))
                if why is not None:
                    return [*events, self._give_up(why)]
                self._total = int.from_bytes(self._buf[:4], "big")
            if len(self._buf) < self._total:
                break
            raw = bytes(self._buf[: self._total])
            del self._buf[: self._total]
            self._total = 0
            event = _read(raw)
            if event.event == BROKEN:
                return [*events, self._give_up(event.data or "")]
            events.append(event)
        return events

    def flush(self) -> list[SSEEvent]:
        """The stream ended: an unfinished frame is an unterminated fragment (never relayed)."""
        rest, self._buf = bytes(self._buf), bytearray()
        return [SSEEvent(raw=rest, terminated=False)] if rest and not self._broken else []

    def _give_up(self, why: str) -> SSEEvent:
        self._broken = True
        self._buf = bytearray()
        return SSEEvent(raw=b"", data=why, event=BROKEN, terminated=False)


def _prelude_fault(prelude: bytes) -> str | None:
    """Why botocore would refuse a frame with this prelude (its checksum, botocore's limits on
    headers and payload, lengths that do not add up); None when it would read on."""
    total, headers = struct.unpack(">II", prelude[:8])
    if total < _PRELUDE + 4 or headers > total - _PRELUDE - 4:
        return "a frame whose lengths do not add up"
    buffer = EventStreamBuffer()
    buffer.add_data(prelude)
    try:
        next(buffer)  # with the prelude alone botocore checks it and waits for the rest
    except StopIteration:
        return None
    except Exception as exc:
        return f"a frame an event stream reader refuses ({type(exc).__name__})"
    return None  # a frame of the prelude alone: read whole next


def _read(raw: bytes) -> SSEEvent:
    """One whole frame read by botocore: its event, or ``BROKEN`` for whatever botocore raises
    on it (a checksum, a header type it does not know, a header cut short, a name that is no
    UTF-8: not only its ``ParserError``)."""
    buffer = EventStreamBuffer()
    buffer.add_data(raw)
    try:
        message = next(iter(buffer))
        payload = bytes(message.payload).decode("utf-8")
    except Exception as exc:
        return SSEEvent(raw=b"", data=f"a frame an event stream reader refuses ({type(exc).__name__})", event=BROKEN)
    headers: dict[str, object] = message.headers  # type: ignore[assignment]  # the stubs say int
    name = next((value for key in _NAME_KEYS if isinstance(value := headers.get(key), str)), None)
    return SSEEvent(raw=raw, data=payload, event=name)


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
