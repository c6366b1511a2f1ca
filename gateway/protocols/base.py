"""The values the protocols' roles (``gateway.protocols.roles``) pass to the rest of the gateway:
what a reply answers, what an item costs, how a stream filter runs and what it promises.

A protocol package is the only code that knows a wire format (OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages, Gemini). The guard and the pipeline talk to it only through its
roles and these values, so adding a protocol is one new package plus one registry line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.trace.model import ToolCall

# (proposed call, position in its round[, alternative answer (chat choice) index]) -> let it through?
# Each alternative answer is judged on its own; a filter that never sees several passes two args.
Judge = Callable[..., bool]


class RoundView(Protocol):
    """What a stream filter knows about the round of calls it judged (one upstream stream)."""

    kept: list[ToolCall]
    dropped: list[ToolCall]  # the refused call and every later call of the round
    rejected: ToolCall | None
    rejected_position: int | None
    judge_errors: list[Exception]  # the judge raised: the call was let through (fail-open)


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """How a stream filter runs: the serving process's settings, with what one request adds."""

    keepalive_s: float | None = 15.0  # while something is held; None: never
    # Protocol fast paths (chat: reading bytes into events, argument byte-matching, a whole
    # round in one read). Off: every event is decoded and read the one general way; the
    # client gets the same bytes either way, only slower (``streaming.fast_paths``).
    fast_paths: bool = True
    # Hold a round's text (and thinking) until its calls are judged, so a refused round is
    # never shown (a conversation already at warn level); protocols that support it read it.
    hold_text: bool = False


class StreamFilter(Protocol):
    """Relays an upstream event stream to the client, holding each tool call until judged.

    Feed it upstream bytes; write what it returns to the client, in order. Text and every event
    that is not part of a tool call go out at once; a tool call's events are held until the call
    is complete and ``judge`` has seen it, then released untouched (byte for byte when nothing
    was dropped) or left out. The first refused call drops itself and every later call of the
    round. When every call was dropped, the stream's closing events are withheld and the
    pipeline decides: ``begin_continuation`` (a re-ask continues the same client stream) or
    ``terminate`` (end the client stream with a final text).

    Filters subclass ``gateway.protocols.streaming.StreamDriver``, which implements all of this
    but the protocol's event parsing and writing.
    """

    # True: nothing reaches the client before every call of the stream is judged (the whole
    # stream is held); the pipeline then sends the headers with the first bytes, after the
    # decision, so they name it.
    holds_whole: bool

    @property
    def round(self) -> RoundView: ...

    # What the filter writes when the upstream fails mid-stream, named for the log and the audit.
    failure_event: str
    # The ``failure.StreamFailure`` the client stream ended with, once it did (the upstream
    # failed, or sent what its protocol forbids); None before. Nothing more is fed then.
    failure: Any

    @property
    def complete(self) -> bool:
        """The upstream stream ended with its protocol's terminal event (else it was truncated)."""
        ...

    @property
    def needs_decision(self) -> bool:
        """Every call of the current round was dropped and nobody decided yet."""
        ...

    def feed(self, data: bytes) -> list[bytes]: ...

    def end_upstream(self) -> list[bytes]:
        """The upstream stream ended: judge and release what is still held."""
        ...

    def cut(self, upstream: bytes) -> list[bytes]:
        """The upstream broke off (timeout, lost connection) after sending ``upstream`` this
        round: a partial event is dropped (it never reached the client) and whatever the client
        has open (a content block, an output item) is closed as the upstream would have closed
        it, so ``terminate`` can end a well-formed stream."""
        ...

    def fail(self, upstream: bytes, error: Any) -> list[bytes]:
        """The upstream failed mid-stream: ``cut``, then the protocol's terminal events for
        ``error``; the stream is over (call ``final`` next)."""
        ...

    def begin_continuation(self) -> None:
        """The next bytes fed come from a re-ask: relay them as the rest of the same stream."""
        ...

    def terminate(self, text: str) -> list[bytes]:
        """End the client stream with ``text`` as the assistant's final message."""
        ...

    def final(self) -> list[bytes]:
        """The client stream is over: whatever closing events are still owed, exactly once."""
        ...

    @property
    def reply(self) -> dict[str, Any] | None:
        """The complete reply the stream carried, when the protocol's stream ends with one
        (Responses' ``response.completed``); None otherwise. Fed to ``History.remember``."""
        ...


@dataclass(frozen=True, slots=True)
class Answer:
    """What a model answer says, for the turn's required-tool check."""

    calls: bool  # the model called a tool: not a final answer
    text: str  # the answer's text


@dataclass(frozen=True, slots=True)
class ItemText:
    """What one conversation item costs in tokens, read by its protocol: the savings estimate
    counts these pieces and never reads a wire key itself."""

    output: bool  # the model wrote it (priced at the output rate; one more round repeats it)
    text: str  # the text the model reads or wrote
    name: str | None = None  # an author name the protocol sends beside the text
    calls: tuple[str, ...] = ()  # each tool call's name and arguments, as sent
