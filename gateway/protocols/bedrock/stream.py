"""Relay Bedrock's event-stream frames with each ``tool_use`` block held until judged: the
Anthropic filter (``anthropic.stream.ToolUseFilter``) over the events the frames carry.

Every frame is read into its Anthropic event (``frames.ChunkDecoder``) and judged exactly as
the first-party stream is: held, released, dropped, renumbered. An event relayed unchanged goes
out as the upstream's own frame, byte for byte; what the gateway writes or renumbers (a block's
new index, the totals of a re-asked message, the termination text) is written as a new chunk
frame (``frames.framed``). Errors end the stream as Bedrock ends one: an exception frame, which
the SDKs raise. A frame that cannot be read (a bad checksum, a chunk with no event) ends the
client stream with an ``internalServerException`` frame, and nothing after it is read: relayed,
the client's own decoder would fail on bytes that are no frame, or find frames after them.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.anthropic import events
from gateway.protocols.anthropic.stream import ToolUseFilter
from gateway.protocols.bedrock import frames
from gateway.protocols.sse import SSEEvent

__all__ = ["BedrockFilter"]

# Bedrock's exception for an error on its side mid-stream (retried by clients that retry), and
# for a request it refuses (a stopped loop: not retried).
SERVER_ERROR = "InternalServerException"
REFUSED = "ValidationException"


class BedrockFilter(ToolUseFilter):
    decoder = frames.ChunkDecoder
    keepalive = frames.chunk(b'{"type":"ping"}')  # the SDK skips a ping
    failure_event = "exception"

    # Every entry point: the gateway's own events framed, the upstream's frames as they came.
    def feed(self, data: bytes) -> list[bytes]:
        return frames.framed(super().feed(data))

    def end_upstream(self) -> list[bytes]:
        return frames.framed(super().end_upstream())

    def cut(self, upstream: bytes) -> list[bytes]:
        return frames.framed(super().cut(upstream))

    def fail(self, upstream: bytes, failure: Any) -> list[bytes]:
        return frames.framed(super().fail(upstream, failure))

    def terminate(self, text: str, model: str | None = None) -> list[bytes]:
        return frames.framed(super().terminate(text, model))

    def final(self) -> list[bytes]:
        return frames.framed(super().final())

    # --- hooks ----------------------------------------------------------------------------------

    def _passes(self, data: bytes) -> bool:
        return False  # frames are read one by one: each carries its event base64-encoded

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        if event.event == frames.UNREAD:  # no frame, or a chunk carrying no event
            self._invalid(out, event.data or "bytes that are no event-stream frame")
            return
        super()._on_event(event, out)

    def _cut(self, upstream: bytes) -> list[bytes]:
        """What closes a block the upstream left open, read from the events its frames carried;
        a call held open is left out first (never completed on partial input)."""
        self._drop_open_calls()
        closing = events.closing(frames.as_events(upstream))
        out = self.feed(frames.as_frames(closing)) if closing else []
        if self.options.hold_text and self._held:  # broken off: the words so far go out, closed
            self._close_held(out)
        return out

    def _failed(self, failure: Any) -> list[bytes]:
        """One exception frame ends the stream (nothing may follow it)."""
        return [frames.exception(REFUSED if failure.final else SERVER_ERROR, failure.message)]
