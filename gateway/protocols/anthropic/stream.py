"""Relay an Anthropic Messages event stream while holding each ``tool_use`` block until judged.

Every event goes to the client at once, except a ``tool_use`` block's ``content_block_start``,
``input_json_delta``s and ``content_block_stop``: they are held until the block stops (its input
is complete), judged, then released byte for byte or left out. The first refused call drops
itself and every later call of the round. Content block indexes must be the positions of the
client's content list (the SDK appends on each start and indexes on each delta), so a block
that follows a dropped one, or comes from a re-ask, is renumbered; an event that keeps its index
goes out as its original bytes.

When every call was dropped, the closing ``message_delta`` (stop_reason tool_use) and
``message_stop`` are withheld for the pipeline: ``begin_continuation`` relays a re-ask as the
rest of the same message (its ``message_start`` left out, its blocks numbered on), ``terminate``
ends it with a text block and ``end_turn``. Usage of every round is added up: a ``message_delta``
carries cumulative counts, so the one the client sees carries the totals of all rounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeGuard

from gateway.protocols.anthropic import events
from gateway.protocols.anthropic.parse import arguments_text
from gateway.protocols.base import Judge
from gateway.protocols.sse import SSEEvent
from gateway.protocols.streaming import StreamDriver, StreamOptions
from gateway.protocols.usage import add_usage
from gateway.trace.model import ToolCall
from gateway.wire import codec


def _is_index(value: Any) -> TypeGuard[int]:
    """A block index as the protocol defines it: a JSON integer (``true`` is none, nor is ``0.0``)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# Events that can pass without being parsed while nothing is held or renumbered.
_PLAIN = frozenset({"content_block_delta", "ping"})


@dataclass(slots=True)
class _ToolBlock:
    """A ``tool_use`` block being held: its events as received, its input as streamed."""

    position: int  # order among the round's tool_use blocks, from 0
    index: int  # the upstream's block index
    id: str
    name: str
    start_input: Any
    parts: list[str] = field(default_factory=list)
    held: list[tuple[bytes, dict[str, Any]]] = field(default_factory=list)
    done: bool = False  # judged

    def to_call(self) -> ToolCall:
        text = "".join(self.parts)
        return ToolCall(self.id, self.name, text if text else arguments_text(self.start_input))


@dataclass(slots=True)
class _TextBlock:
    """A text or thinking block held until its round's calls are judged (``hold_text``): a
    refused round's words are never shown."""

    index: int  # the upstream's block index
    held: list[tuple[bytes, dict[str, Any]]] = field(default_factory=list)
    done: bool = False  # the round ended: it goes out, or with an all-refused round, never


class ToolUseFilter(StreamDriver):
    """Feed upstream bytes in, write the returned bytes to the client, in order."""

    keepalive = events.PING  # the SDK skips a ping

    def __init__(self, judge: Judge, model: str = "", options: StreamOptions | None = None) -> None:
        self.message_id: str | None = None
        self.model = model  # the upstream's own, once its message_start arrived
        self._next = 0  # the client's next content block index
        self._carried: Any = None  # usage of earlier rounds of this client message
        self._started = False
        self._ended = False  # the upstream sent message_stop (or its own error event)
        super().__init__(judge, options)

    # --- the driver's hooks -------------------------------------------------------------

    def _passes(self, data: bytes) -> bool:
        # Whole events, none opening a block or touching the message: text deltas, block
        # stops and pings of unrenumbered blocks, most of a stream. Relayed as they are.
        return (
            self._identity
            and not self._held
            and self._started
            and self._fast_paths
            and not (self._terminated or self._final)
            and data.endswith(b"\n\n")
            and self._decoder.idle
            and b"content_block_start" not in data
            and b"message_" not in data
        )

    def _cut(self, upstream: bytes) -> list[bytes]:
        self._drop_open_calls()
        out = self.feed(events.closing(upstream))
        if self.options.hold_text and self._held:  # broken off: the words so far go out, closed
            self._close_held(out)
        return out

    def _drop_open_calls(self) -> None:
        """Broken off: a call still held may be cut short, and a call is never completed on
        partial input: it is left out (its closing events are then ignored), with the calls
        held behind it, before anything closes what the client has open."""
        for tool in [b for b in self._held if isinstance(b, _ToolBlock) and not b.done]:
            self._held.remove(tool)
            self._assign(tool.index, None)

    def _continue(self) -> None:
        self._carried = add_usage(self._carried, self._usage)

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        """The client message ends with ``text`` and ``end_turn``."""
        out = [] if self._started else [self._opening()]
        out += events.text_block(self._next, text)
        self._next += 1
        out += events.message_end("end_turn", self._totals())
        return out

    failure_event = "error"

    def _failed(self, failure: Any) -> list[bytes]:
        """One ``error`` event, the end of the stream: the SDKs raise it, and nothing may follow
        it (a ``message_stop`` after it reads as a finished answer). A stopped loop is an invalid
        request (not retried); a failed upstream an API error (retried by clients that retry)."""
        kind = "invalid_request_error" if failure.final else "api_error"
        return [events.event({"type": "error", "error": {"type": kind, "message": failure.message}})]

    def _complete(self) -> bool:
        return self._ended

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        """A closing ``message_delta`` / ``message_stop`` nobody decided on."""
        if undecided and self._started:
            out += events.message_end("end_turn", self._totals())

    # --- events ---------------------------------------------------------------------------

    def _start_round(self) -> None:
        self._blocks: dict[int, int | _ToolBlock | _TextBlock | None] = {}  # upstream index -> client index
        self._stopped: set[int] = set()  # upstream indexes whose block stopped: nothing more may come
        self._identity = True  # every block kept its upstream index: relay events unparsed
        self._positions = 0
        self._usage: Any = None  # this round's usage: message_start's, overlaid by message_delta's

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        raw = event.raw
        if event.data is None:
            out.append(raw)
            return
        if event.event in _PLAIN and not self._held and self._identity and self._fast_paths:
            out.append(raw)  # text deltas, the bulk of a stream: relayed unparsed
            return
        try:
            data = codec.loads(event.data)
        except codec.DecodeError:
            data = None
        kind = data.get("type") if isinstance(data, dict) else None
        handler = self._HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:  # ping, error, and anything newer than this code: relayed
            self._ended = self._ended or kind == "error"  # the upstream's own terminal error
            out.append(raw)
            return
        handler(self, data, raw, out)

    def _on_message_start(self, data: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        message = message_value if isinstance(message_value := data.get("message"), dict) else {}
        self._usage = message.get("usage")
        if self._started:  # a re-ask continues the message the client already has
            return
        self._started = True
        self.message_id = message.get("id") if isinstance(message.get("id"), str) else None
        if isinstance(message.get("model"), str):
            self.model = message["model"]
        out.append(raw)

    def _on_block_start(self, data: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        index, block = data.get("index"), data.get("content_block")
        if not _is_index(index) or not isinstance(block, dict) or index in self._blocks:
            # a second start at one index would reach the client under a verdict given to another
            self._invalid(out, "a content block start without a new integer index and a block")
            return
        if block.get("type") == "tool_use":
            name, ident = block.get("name"), block.get("id")
            tool = _ToolBlock(
                self._positions,
                index,
                ident if isinstance(ident, str) else "",
                name if isinstance(name, str) else "",
                block.get("input"),
            )
            self._positions += 1
            tool.held.append((raw, data))
            self._blocks[index] = tool
            self._held.hold(tool)
            return
        if self.options.hold_text:
            text = _TextBlock(index, [(raw, data)])
            self._blocks[index] = text
            self._held.hold(text)
            return
        client = self._next
        self._next += 1
        self._assign(index, client)
        self._emit(data, raw, client, out)

    def _on_block_event(self, data: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        index = data.get("index")
        if not _is_index(index) or index in self._stopped:
            # an SDK reads "0", 0.0 or true as a block of its own, or fails; after its stop a
            # block is over, and a start of a call in it would pass under its earlier verdict
            self._invalid(out, "a content block event without an integer index, or after its block stopped")
            return
        if data.get("type") == "content_block_stop":
            self._stopped.add(index)
        target = self._blocks.get(index, index)
        if isinstance(target, _ToolBlock):
            if target.done:  # an event after the block was judged: it follows the verdict
                self._after_verdict(target, data, raw, out)
                return
            target.held.append((raw, data))
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("partial_json"), str):
                target.parts.append(delta["partial_json"])
            if data.get("type") == "content_block_stop":
                self._settle([target], out)
            return
        if target is None:  # a block of a dropped call
            return
        if isinstance(target, _TextBlock):
            target.held.append((raw, data))
            return
        self._emit(data, raw, target, out)

    def _on_message_delta(self, data: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        self._close_held(out)
        self._usage = events.overlay_usage(self._usage, data.get("usage"))
        delta = data.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self.round.finish_reason = delta["stop_reason"]
        if self.round.all_dropped:
            self.round.finish_withheld = True
            return
        if self._carried is None:
            out.append(raw)
            return
        out.append(events.event({**data, "usage": self._totals()}))

    def _on_message_stop(self, data: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        self._ended = True
        if not self.round.finish_withheld:
            out.append(raw)

    _HANDLERS: ClassVar[dict[str, Callable[..., None]]] = {
        "message_start": _on_message_start,
        "content_block_start": _on_block_start,
        "content_block_delta": _on_block_event,
        "content_block_stop": _on_block_event,
        "message_delta": _on_message_delta,
        "message_stop": _on_message_stop,
    }

    # --- judging and releasing ----------------------------------------------------------------

    def _settle(self, completed: list[_ToolBlock], out: list[bytes]) -> None:
        self.round.settle(completed, self._judge, 0)
        for tool in completed:
            tool.done = True
        self._release(out)

    def _release(self, out: list[bytes]) -> None:
        held = self._held
        while held and held[0].done:
            self._write_block(held.popleft(), out)

    def _write_block(self, tool: _ToolBlock | _TextBlock, out: list[bytes]) -> None:
        if isinstance(tool, _TextBlock):
            self._write_text(tool, out)
            return
        if tool.position not in self.round.out_index:  # refused, or after the refused call
            self._assign(tool.index, None)
            return
        client = self._next
        self._next += 1
        self._assign(tool.index, client)
        for raw, data in tool.held:
            self._emit(data, raw, client, out)

    def _write_text(self, text: _TextBlock, out: list[bytes]) -> None:
        if self.round.all_dropped:  # the round is asked again or ended: its words never shown
            self._assign(text.index, None)
            return
        client = self._next
        self._next += 1
        self._assign(text.index, client)
        for raw, data in text.held:
            self._emit(data, raw, client, out)

    def _after_verdict(self, tool: _ToolBlock, data: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        client = self._blocks.get(tool.index)
        if isinstance(client, int):
            self._emit(data, raw, client, out)

    def _close_held(self, out: list[bytes]) -> None:
        """The message ends (or the stream does): blocks still open are complete as they are."""
        pending = [tool for tool in self._held if not tool.done and isinstance(tool, _ToolBlock)]
        if pending:
            self._settle(pending, out)
        if self.options.hold_text and self._held:  # the round's calls are judged: its words may go
            for block in self._held:
                block.done = True
            self._release(out)

    # --- output ---------------------------------------------------------------------------

    def _assign(self, index: int, client: int | None) -> None:
        self._blocks[index] = client
        self._identity = self._identity and client == index

    def _emit(self, data: dict[str, Any], raw: bytes, client: int, out: list[bytes]) -> None:
        if data.get("index") == client:
            out.append(raw)
        else:
            out.append(events.event({**data, "index": client}))

    def _totals(self) -> dict[str, Any]:
        """Usage of all rounds for a ``message_delta``: counters only (a ``service_tier`` text
        belongs to ``message_start``)."""
        usage = add_usage(self._carried, self._usage)
        totals = {k: v for k, v in usage.items() if not isinstance(v, str)} if isinstance(usage, dict) else {}
        totals.setdefault("output_tokens", 0)
        return totals

    def _opening(self) -> bytes:
        """A ``message_start`` for a stream the upstream never opened."""
        self._started = True
        self.message_id = self.message_id or events.new_message_id()
        return events.message_start(self.message_id, self.model, events.zero_usage())
