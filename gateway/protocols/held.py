"""What the three SSE stream filters (chat, responses, anthropic) share: the queue of what they
hold back from the client, the keepalive that queue owes it, and the rounds they judge.

These run on every upstream read, so nothing here adds work to a filter's path per event: the
queue is a ``deque`` (appends, pops and truth tests stay C calls), and a filter starts its clock
itself, inline, when it holds into an empty queue.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from gateway.protocols.chat.rounds import RoundState
from gateway.protocols.sse import SSEDecoder, SSEEvent, comment

__all__ = ["HOLDING", "Held", "HoldingFilter"]

HOLDING = comment("holding")


class Held(deque):
    """Held events (or calls, or blocks), oldest first, and the keepalive they owe the client.

    While a held call's arguments stream in (a large file write takes a while) the client may get
    nothing; a keepalive every ``every`` seconds keeps idle-timeout proxies from cutting the
    connection. ``since`` is when the wait began: set it on holding into an empty queue.
    """

    __slots__ = ("every", "payload", "quiet_only", "since")

    def __init__(self, every: float | None, payload: bytes = HOLDING, quiet_only: bool = True) -> None:
        super().__init__()
        self.every = every  # None: never
        self.payload = payload
        # True: bytes that went out anyway restart the wait, a keepalive goes only into a quiet
        # read. False (responses): the wait counts from the hold or the last keepalive only.
        self.quiet_only = quiet_only
        self.since = 0.0

    def keepalive(self, out: list[bytes]) -> None:
        """Call after a read that left something held, with the bytes that read sends."""
        if self.every is None:
            return
        now = time.monotonic()
        if out and self.quiet_only:
            self.since = now
        elif now - self.since >= self.every:
            out.append(self.payload)
            self.since = now


class HoldingFilter:
    """A filter's rounds (one per upstream stream) and the end of each: the shared half of
    ``base.StreamFilter``. A subclass sets ``rounds``, ``_decoder``, ``_terminated``, ``_final``
    and implements ``_on_event`` and ``_close_held``."""

    rounds: list[RoundState]
    _decoder: SSEDecoder
    _terminated: bool
    _final: bool

    @property
    def reply(self) -> dict[str, Any] | None:
        """None: chat and Messages streams carry no complete reply object, so there is nothing
        to remember either (Responses' filter returns its closing response)."""
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

    def end_upstream(self) -> list[bytes]:
        """The upstream stream ended: read its last bytes, judge and release what is still held."""
        out: list[bytes] = []
        if self.round.ended:
            return out
        for event in self._decoder.flush():
            self._on_event(event, out)
        self._close_held(out)
        self.round.ended = True
        return out

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        raise NotImplementedError

    def _close_held(self, out: list[bytes]) -> None:
        """The stream (or the message) ends: every call still open is complete as it is."""
        raise NotImplementedError

