"""The one stream driver: what every protocol's stream filter does alike, written once.

A filter (``base.StreamFilter``) relays an upstream event stream, holding each tool call until
judged. Everything about that which does not depend on the wire format lives here: the rounds
(one per upstream stream: the first and each re-ask), the queue of what is held back and the
keepalive it owes the client, the decoder, and the stream's life: ``feed``, ``end_upstream``,
``cut``, ``begin_continuation``, ``terminate``, ``final``, ``needs_decision``. A protocol's filter
subclasses ``StreamDriver`` and supplies only event parsing and event writing, as hooks:

- ``_on_event(event, out)``: read one event; hold it (``self._held.hold``) or write to ``out``;
  completed calls go to ``self.round.settle`` and what their verdict frees to ``_release``;
- ``_release(out)``: write what is held and now free to go (called after every read that
  leaves something held, too);
- ``_close_held(out)``: the stream ends: every call still open is complete as it is;
- ``_passes(data)``: a whole read relayed as it came, unread (a protocol's fast path); False
  when ``options.fast_paths`` is off;
- ``_start_round()`` / ``_continue()``: per-round state; what a re-ask carries over;
- ``_cut(upstream)``: the events closing what the client has open after a broken-off read;
- ``_end_with(text, model)``: the events ending the client stream with ``text``;
- ``_owed(out, undecided)``: the closing events still owed once the client stream is over;
- ``_failed(failure)``: the protocol's terminal error events (``fail``): for an upstream that
  failed mid-stream, or ended without its terminal event, and for the policy's error ending;
  the stream is over after them (``final`` adds nothing);
- ``_complete()``: the upstream stream ended with its protocol's terminal event.

A filter that reads an event its protocol forbids calls ``_invalid``: the client stream ends
with the protocol's error events there, and the pipeline reads no more of the upstream.

Holding text (``options.hold_text``): a protocol may hold a round's text too, until the round's
calls are judged (``hold_text`` tells it to; the driver's queue and keepalive serve it alike).

These run on every upstream read, so nothing here adds work per event: the queue is a
``deque`` (appends, pops and truth tests stay C calls), and the hooks a read calls are the
protocol's own.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.failure import StreamFailure
from gateway.protocols.judged_round import RoundState
from gateway.protocols.sse import SSEDecoder, SSEEvent, comment

__all__ = ["HOLDING", "Held", "StreamDriver", "StreamOptions"]

HOLDING = comment("holding")


DEFAULT = StreamOptions()


class Held(deque[Any]):
    """Held events (or calls, or blocks), oldest first, and the keepalive they owe the client.

    While a held call's arguments stream in (a large file write takes a while) the client may get
    nothing; a keepalive every ``every`` seconds keeps idle-timeout proxies from cutting the
    connection. ``since`` is when the wait began: ``hold`` sets it on holding into an empty queue.
    """

    __slots__ = ("every", "payload", "since")

    def __init__(self, every: float | None, payload: bytes = HOLDING) -> None:
        super().__init__()
        self.every = every  # None: never
        self.payload = payload
        self.since = 0.0

    def hold(self, item: Any) -> None:
        if not self:
            self.since = time.monotonic()
        self.append(item)

    def keepalive(self, out: list[bytes]) -> None:
        """Call after a read that left something held, with the bytes that read sends: bytes
        that went out anyway restart the wait; a keepalive goes only into a quiet read."""
        if self.every is None:
            return
        now = time.monotonic()
        if out:
            self.since = now
        elif now - self.since >= self.every:
            out.append(self.payload)
            self.since = now


class StreamDriver:
    """The shared half of ``base.StreamFilter``; see the module for the hooks a filter supplies."""

    # True: nothing reaches the client before every call of the stream is judged (the
    # pipeline then sends the headers with the first bytes, naming the decision).
    holds_whole = False
    failure_event = "none"  # what ``_failed`` writes, named for the log and the audit
    keepalive = HOLDING  # what a keepalive writes: a comment, or an event the protocol's SDKs skip
    # What splits the upstream's bytes into events: SSE, or a protocol's own framing (AWS event
    # streams), yielding ``SSEEvent``s alike (``feed`` / ``flush``).
    decoder: type[Any] = SSEDecoder

    def __init__(self, judge: Judge, options: StreamOptions | None = None) -> None:
        self._judge = judge
        self.options = options = options or DEFAULT
        self._fast_paths = options.fast_paths
        self.rounds: list[RoundState] = []
        self._continuation = self._saw_done = self._terminated = self._final = False
        self.failure: Any = None  # the StreamFailure the client stream ended with (``fail``)
        self._new_round()

    # --- the contract ---------------------------------------------------------------------

    @property
    def reply(self) -> dict[str, Any] | None:
        """None: most streams carry no complete reply object (Responses' does)."""
        return None

    @property
    def round(self) -> RoundState:
        return self.rounds[-1]

    @property
    def needs_decision(self) -> bool:
        """Every call of this round was dropped: re-ask (``begin_continuation``) or ``terminate``."""
        state = self.round
        decided = self._terminated or self._final
        return state.all_dropped and (state.finish_withheld or state.ended) and not decided

    def feed(self, data: bytes) -> list[bytes]:
        if self._passes(data):
            return [data]
        if self._terminated or self._final:  # the client stream is closed: nothing more fits
            return []
        out: list[bytes] = []
        for event in self._decoder.feed(data):
            self._on_event(event, out)
            if self.failure is not None:  # the event ended the client stream: none after it
                return out
        held = self._held
        if held:
            self._release(out)
            held.keepalive(out)
        return out

    def end_upstream(self) -> list[bytes]:
        """The upstream stream ended: read its last bytes, judge and release what is still held.
        An event cut short (no blank line after it, a frame missing its end) is dropped: sent,
        the client would read it fused with whatever the gateway writes next. A stream that
        ended before its protocol's terminal event holds calls that may be cut short too: they
        are left held, for ``fail`` to drop (a call is never completed on partial input)."""
        out: list[bytes] = []
        if self.round.ended:
            return out
        for event in self._decoder.flush():
            if event.terminated and self.failure is None:
                self._on_event(event, out)
        if self.failure is not None:
            return out
        if self._complete():
            self._close_held(out)
        self.round.ended = True
        return out

    def cut(self, upstream: bytes) -> list[bytes]:
        """The upstream broke off after sending ``upstream`` this round: a partial event is
        dropped (it never reached the client, and is never to be completed); what the client
        has open is closed as the upstream would have closed it."""
        self._decoder = self.decoder()
        return self._cut(upstream)

    def fail(self, upstream: bytes, failure: Any) -> list[bytes]:
        """End the client stream with an error (``failure``: a ``protocols.failure.StreamFailure``):
        ``cut``, then the protocol's terminal error events (``_failed``); nothing follows them."""
        if self._terminated or self._final:
            return []
        out = self.cut(upstream)
        self._held.clear()
        self.round.ended = True
        self._terminated = True
        self.failure = failure
        out += self._failed(failure)
        return out

    def _invalid(self, out: list[bytes], what: str) -> None:
        """The upstream sent ``what``, which its protocol forbids and the client's reader would
        read anyway or choke on (a frame botocore refuses, a block index that is no integer):
        the client stream ends here with the protocol's error events, nothing held goes out, and
        nothing after it is read (``failure`` is set)."""
        failure = StreamFailure(f"The upstream model provider sent {what}.", "upstream_invalid_stream")
        out += self.fail(b"", failure)

    @property
    def complete(self) -> bool:
        """The upstream stream ended with its protocol's terminal event (else it was truncated)."""
        return self._complete()

    def begin_continuation(self) -> None:
        """The next bytes fed come from a re-ask: relay them as the rest of the same stream."""
        self._continue()
        self._continuation = True
        self._saw_done = False
        self._new_round()

    def terminate(self, text: str, model: str | None = None) -> list[bytes]:
        """End the client stream with ``text`` as the assistant's final message (call ``final``
        next). Whatever is still held or unread is dropped with the stream."""
        if self._terminated or self._final:
            return []
        state = self.round
        state.finish_withheld = False
        state.ended = True
        self._held.clear()
        self._terminated = True
        return self._end_with(text, model)

    def final(self) -> list[bytes]:
        """The client stream is over: whatever closing events are still owed, exactly once."""
        if self._final:
            return []
        if self.failure is not None:  # the error events were the end
            self._final = True
            return []
        out = self.end_upstream()
        undecided = self.needs_decision  # nobody decided: never leave the client unclosed
        self._final = True
        self._owed(out, undecided)
        return out

    # --- rounds -------------------------------------------------------------------------------

    def _new_round(self) -> None:
        self._decoder = self.decoder()
        self._held: Held = Held(self.options.keepalive_s, self.keepalive)
        self.rounds.append(RoundState())
        self._start_round()

    # --- the protocol's hooks ---------------------------------------------------------------

    def _passes(self, data: bytes) -> bool:
        return False

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        raise NotImplementedError

    def _release(self, out: list[bytes]) -> None:
        """Write what is held and free to go; the default: each filter releases as it judges."""

    def _close_held(self, out: list[bytes]) -> None:
        raise NotImplementedError

    def _start_round(self) -> None:
        """Per-round state of the protocol (the driver's is set already)."""

    def _continue(self) -> None:
        """What a re-ask carries over from the round it replaces (usage, numbering)."""

    def _cut(self, upstream: bytes) -> list[bytes]:
        return []

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        raise NotImplementedError

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        """Append the closing events still owed; ``undecided``: the round's calls were all
        dropped and nobody decided, so the stream must still end well-formed."""

    def _failed(self, failure: Any) -> list[bytes]:
        return []

    def _complete(self) -> bool:
        return True
