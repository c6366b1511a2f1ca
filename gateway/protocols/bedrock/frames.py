"""Bedrock's InvokeModelWithResponseStream frames and the Anthropic stream events they carry.

Each ``chunk`` event frame's payload is ``{"bytes": "<base64 of one Anthropic stream event
JSON>"}`` (Bedrock may add a padding field ``p``); an error is an exception frame
(``:message-type: exception``, ``:exception-type: ThrottlingException``, payload
``{"message": ...}``). The Anthropic SDKs unwrap each chunk into the event the first-party API
would have streamed, and read an exception frame as a stream ``error``.

The stream filter reads the Anthropic events (``ChunkDecoder``: each keeps its frame's bytes, so
an event relayed unchanged goes out as the upstream's frame); what the gateway writes itself is
written as Anthropic events and framed here (``framed``).
"""

from __future__ import annotations

import base64
from typing import Any

from gateway.protocols.eventstream import BROKEN, FrameDecoder, frame
from gateway.protocols.sse import SSEDecoder, SSEEvent
from gateway.wire import codec

__all__ = ["CHUNK", "ChunkDecoder", "as_events", "as_frames", "chunk", "exception", "framed"]

CHUNK = "chunk"
# An Anthropic stream error event stands for an exception frame: the filter ends on it.
_ERROR = '{"type":"error"}'
_EVENT_PREFIX = b"event: "


def chunk(event: bytes) -> bytes:
    """One ``chunk`` frame carrying ``event`` (an Anthropic stream event's JSON)."""
    return frame(CHUNK, codec.dumps({"bytes": base64.b64encode(event).decode("ascii")}))


# The exceptions a Bedrock stream may end with, by the names its frames carry: the members of
# the API's ``ResponseStream`` (botocore and the SDKs read the message of these only).
STREAM_EXCEPTIONS = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "modelTimeoutException",
        "serviceUnavailableException",
    }
)


def exception(name: str, message: str) -> bytes:
    """One exception frame, as Bedrock ends a stream: ``name`` is Bedrock's exception type
    (``ThrottlingException``), written as the stream's member (``throttlingException``); one
    a stream cannot carry is an ``internalServerException``."""
    member = name[:1].lower() + name[1:]
    member = member if member in STREAM_EXCEPTIONS else "internalServerException"
    return frame(member, codec.dumps({"message": message}), "exception")


def unwrap(payload: str) -> str | None:
    """The Anthropic event a chunk's payload carries, or None when it carries none."""
    try:
        body = codec.loads(payload)
        data = body.get("bytes") if isinstance(body, dict) else None
        return base64.b64decode(data, validate=True).decode("utf-8") if isinstance(data, str) else None
    except codec.DecodeError:  # binascii's and UTF-8's errors are ValueErrors too
        return None


class ChunkDecoder:
    """Frames in, Anthropic events out: ``raw`` is the frame's bytes, ``data`` the event's JSON.
    An exception frame reads as an Anthropic ``error`` event (the stream's end); what is no
    frame, or a chunk carrying no event, is an ``unread`` event whose ``data`` says which."""

    __slots__ = ("_frames",)

    def __init__(self) -> None:
        self._frames = FrameDecoder()

    def feed(self, data: bytes) -> list[SSEEvent]:
        return [_event(event) for event in self._frames.feed(data)]

    def flush(self) -> list[SSEEvent]:
        return [_event(event) for event in self._frames.flush()]


UNREAD = "unread"


def _event(event: SSEEvent) -> SSEEvent:
    if event.event == BROKEN:
        return SSEEvent(raw=b"", data=event.data, event=UNREAD, terminated=False)
    if not event.terminated:  # a frame cut short: dropped by the stream driver
        return event
    if event.event == CHUNK:
        data = unwrap(event.data or "")
        if data is None:
            return SSEEvent(raw=b"", data="a chunk frame carrying no event", event=UNREAD)
        return SSEEvent(raw=event.raw, data=data)
    if event.event is not None and event.event.endswith("Exception"):
        return SSEEvent(raw=event.raw, data=_ERROR)
    return SSEEvent(raw=event.raw)  # an event type newer than this code: relayed as it came


def framed(out: list[bytes]) -> list[bytes]:
    """``out`` with each Anthropic SSE event the gateway wrote in it framed as a chunk; frames
    (the upstream's, relayed) go as they are. (A frame never starts with ``event: ``: its first
    four bytes are its length, and no frame is that long.)"""
    if not any(part.startswith(_EVENT_PREFIX) for part in out):
        return out
    return [_framed(part) if part.startswith(_EVENT_PREFIX) else part for part in out]


def _framed(sse: bytes) -> bytes:
    return b"".join(chunk(event.data.encode("utf-8")) for event in SSEDecoder().feed(sse) if event.data is not None)


def as_events(stream: bytes) -> bytes:
    """A complete frame stream as the Anthropic SSE stream it carries (for readers of those);
    an exception frame as an ``error`` event."""
    out = bytearray()
    for event in FrameDecoder().feed(stream):
        if event.event == CHUNK and event.data is not None and (data := unwrap(event.data)) is not None:
            out += _sse(data)
        elif event.data is not None and event.event is not None and event.event.endswith("Exception"):
            out += _sse(codec.dumps(_error(event.event, event.data)).decode("utf-8"))
    return bytes(out)


def as_frames(stream: bytes) -> bytes:
    """An Anthropic SSE stream framed, one chunk per event."""
    return b"".join(chunk(event.data.encode("utf-8")) for event in SSEDecoder().feed(stream) if event.data)


def _sse(data: str) -> bytes:
    kind = codec.loads(data).get("type", "message") if data.startswith("{") else "message"
    return b"event: " + str(kind).encode() + b"\ndata: " + data.encode("utf-8") + b"\n\n"


def _error(name: str, payload: str) -> dict[str, Any]:
    try:
        body = codec.loads(payload)
    except codec.DecodeError:
        body = {}
    message = body.get("message") if isinstance(body, dict) else None
    return {"type": "error", "error": {"type": name, "message": message if isinstance(message, str) else ""}}
