"""Relay a ConverseStream (AWS event-stream frames) while holding each ``toolUse`` block until judged.

A Converse stream is ``messageStart``, content blocks (``contentBlockStart`` for a tool call or
an image, then ``contentBlockDelta``s and a ``contentBlockStop``; a text or reasoning block opens
with its first delta), ``messageStop`` (``stopReason``) and ``metadata`` (usage). Every frame goes
to the client at once, as it came, except a ``toolUse`` block's: held until its stop (its input
complete), judged, then released byte for byte or left out. The first refused call drops itself
and every later call of the round. ``contentBlockIndex`` must be the client's count of blocks,
so a block after a dropped one, or from a re-ask, is renumbered (a re-framed event).

When every call was dropped, ``messageStop`` and ``metadata`` are withheld for the pipeline:
``begin_continuation`` relays a re-ask as the rest of the same message (its ``messageStart``
left out, its blocks numbered on), ``terminate`` ends it with a text block, ``messageStop``
``end_turn`` and ``metadata``. The ``metadata`` the client sees carries the usage of all rounds.
Holding text (``options.hold_text``): text and reasoning blocks are held too, until the round's
calls are judged, so a refused round's words are never shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.protocols.base import Answer, Judge
from gateway.protocols.converse import events
from gateway.protocols.eventstream import BROKEN, FrameDecoder
from gateway.protocols.sse import SSEEvent
from gateway.protocols.streaming import StreamDriver, StreamOptions
from gateway.protocols.usage import add_usage
from gateway.trace.model import ToolCall
from gateway.wire import codec

Frame = tuple[bytes, str, dict[str, Any]]  # (bytes as received, event name, payload)
_BLOCK_EVENTS = frozenset({"contentBlockStart", "contentBlockDelta", "contentBlockStop"})


@dataclass(slots=True)
class _ToolBlock:
    """A ``toolUse`` block being held: its frames as received, its input as streamed."""

    position: int  # order among the round's toolUse blocks, from 0
    index: int  # the upstream's block index
    id: str
    name: str
    parts: list[str] = field(default_factory=list)
    held: list[Frame] = field(default_factory=list)
    done: bool = False  # judged

    def to_call(self) -> ToolCall:
        return ToolCall(self.id, self.name, "".join(self.parts) or "{}")


@dataclass(slots=True)
class _TextBlock:
    """A text or reasoning block held until its round's calls are judged (``hold_text``)."""

    index: int
    held: list[Frame] = field(default_factory=list)
    done: bool = False


class ConverseStreamFilter(StreamDriver):
    """Feed upstream bytes in, write the returned bytes to the client, in order."""

    decoder = FrameDecoder
    failure_event = "exception"

    def __init__(self, judge: Judge, options: StreamOptions | None = None) -> None:
        self._next = 0  # the client's next content block index
        self._open: set[int] = set()  # client blocks begun and not stopped
        self._carried: Any = None  # usage of earlier rounds of this client message
        self._started = False
        self._ended = False  # the upstream's messageStop (or its exception) came
        super().__init__(judge, options)

    # --- the driver's hooks -------------------------------------------------------------

    def _start_round(self) -> None:
        self._blocks: dict[int, int | _ToolBlock | _TextBlock | None] = {}  # upstream index -> client
        self._stopped: set[int] = set()  # upstream indexes whose block stopped: nothing more may come
        self._positions = 0
        self._usage: Any = None  # this round's, from its metadata

    def _continue(self) -> None:
        self._carried = add_usage(self._carried, self._usage)

    def _complete(self) -> bool:
        return self._ended

    def _failed(self, failure: Any) -> list[bytes]:
        """One exception frame, the end of the stream (botocore raises it): a stopped loop is a
        validation error (never retried), a failed upstream an internal one."""
        name = "validationException" if failure.final else "internalServerException"
        return [events.exception(name, failure.message)]

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        out = [] if self._started else [events.message_start()]
        self._started = True
        out += self._closing_open()
        out += events.text_block(self._next, text)
        self._next += 1
        return out + events.message_end("end_turn", self._totals())

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        if undecided and self._started:
            out += events.message_end("end_turn", self._totals())

    def _cut(self, upstream: bytes) -> list[bytes]:
        """Broken off: held words go out (a call is never completed on partial input), and the
        client's open blocks are stopped."""
        out: list[bytes] = []
        for block in self._held:
            if isinstance(block, _TextBlock) and not self.round.all_dropped:
                self._write(block, out)
        self._held.clear()
        return out + self._closing_open()

    def _close_held(self, out: list[bytes]) -> None:
        """The message ends (or the stream does): calls still open are complete as they are."""
        pending = [b for b in self._held if isinstance(b, _ToolBlock) and not b.done]
        if pending:
            self._settle(pending, out)
        if self._held:  # the round's calls are judged: its held words may go
            for block in self._held:
                block.done = True
            self._release(out)

    def _release(self, out: list[bytes]) -> None:
        held = self._held
        while held and held[0].done:
            self._write(held.popleft(), out)

    # --- events ---------------------------------------------------------------------------

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        name = event.event
        if name == BROKEN:  # what boto3 would not read as frames: the stream ends here
            self._invalid(out, event.data or "bytes that are no event-stream frame")
            return
        try:
            data = codec.loads(event.data) if event.data is not None else None
        except codec.DecodeError:
            data = None
        if not isinstance(data, dict) or not isinstance(name, str):
            out.append(event.raw)  # unreadable: as it came, never judged
            return
        if name in _BLOCK_EVENTS:
            self._on_block(event.raw, name, data, out)
        elif name == "messageStart":
            if not self._started:  # a re-ask continues the message the client already has
                self._started = True
                out.append(event.raw)
        elif name == "messageStop":
            self._on_stop(event.raw, data, out)
        elif name == "metadata":
            self._on_metadata(event.raw, data, out)
        else:  # an exception (the upstream's own end), or anything newer than this code
            self._ended = self._ended or name.endswith("Exception")
            out.append(event.raw)

    def _on_block(self, raw: bytes, name: str, data: dict[str, Any], out: list[bytes]) -> None:
        index = data.get("contentBlockIndex")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            # boto3 hands "0", 0.0 or true to its caller as it came: a block the client would
            # read, under no index this filter can hold it by
            self._invalid(out, f"a {name} event without an integer contentBlockIndex")
            return
        if index in self._stopped or (name == "contentBlockStart" and index in self._blocks):
            # a block is over after its stop, and begins once: a call started again at an index
            # would reach the client under the verdict its first block got
            self._invalid(out, f"a {name} event for a block that already stopped or started")
            return
        if name == "contentBlockStop":
            self._stopped.add(index)
        frame = (raw, name, data)
        if index not in self._blocks:
            self._begin(index, frame, out)
            return
        target = self._blocks[index]
        if target is None:  # a block of a dropped call
            return
        if isinstance(target, int):
            self._emit(frame, target, out)
            return
        target.held.append(frame)  # written with the block when it is released
        if isinstance(target, _ToolBlock) and not target.done:
            target.parts.append(_input_delta(data))
            if name == "contentBlockStop":
                self._settle([target], out)

    def _begin(self, index: int, frame: Frame, out: list[bytes]) -> None:
        """A block's first frame: a ``toolUse`` start is held; another block is relayed (held
        with ``hold_text``)."""
        start = frame[2].get("start")
        use = start.get("toolUse") if isinstance(start, dict) else None
        if isinstance(use, dict):
            ident, name = use.get("toolUseId"), use.get("name")
            tool = _ToolBlock(
                self._positions, index, ident if isinstance(ident, str) else "", name if isinstance(name, str) else ""
            )
            self._positions += 1
            tool.held.append(frame)
            self._blocks[index] = tool
            self._held.hold(tool)
        elif self.options.hold_text:
            text = _TextBlock(index, [frame])
            self._blocks[index] = text
            self._held.hold(text)
        else:
            self._blocks[index] = client = self._claim()
            self._emit(frame, client, out)

    def _on_stop(self, raw: bytes, data: dict[str, Any], out: list[bytes]) -> None:
        self._close_held(out)
        self._ended = True
        if isinstance(data.get("stopReason"), str):
            self.round.finish_reason = data["stopReason"]
        if self.round.all_dropped:
            self.round.finish_withheld = True
            return
        out.append(raw)

    def _on_metadata(self, raw: bytes, data: dict[str, Any], out: list[bytes]) -> None:
        self._usage = data.get("usage")
        if self.round.finish_withheld:  # it closes the message the pipeline decides about
            return
        if self._carried is None:
            out.append(raw)
            return
        out.append(events.event("metadata", {**data, "usage": self._totals()}))

    # --- judging and writing ----------------------------------------------------------------

    def _settle(self, completed: list[_ToolBlock], out: list[bytes]) -> None:
        self.round.settle(completed, self._judge, 0)
        for tool in completed:
            tool.done = True
        self._release(out)

    def _write(self, block: _ToolBlock | _TextBlock, out: list[bytes]) -> None:
        refused = (
            self.round.all_dropped if isinstance(block, _TextBlock) else block.position not in self.round.out_index
        )
        if refused:  # a refused call (or after it), or the words of an all-refused round
            self._blocks[block.index] = None
            return
        self._blocks[block.index] = client = self._claim()
        for frame in block.held:
            self._emit(frame, client, out)

    def _claim(self) -> int:
        client = self._next
        self._next += 1
        return client

    def _emit(self, frame: Frame, client: int, out: list[bytes]) -> None:
        raw, name, data = frame
        if name == "contentBlockStop":
            self._open.discard(client)
        else:
            self._open.add(client)
        if data.get("contentBlockIndex") == client:
            out.append(raw)
        else:
            out.append(events.event(name, {**data, "contentBlockIndex": client}))

    def _closing_open(self) -> list[bytes]:
        closing = [events.event("contentBlockStop", {"contentBlockIndex": i}) for i in sorted(self._open)]
        self._open.clear()
        return closing

    def _totals(self) -> dict[str, Any]:
        usage = add_usage(self._carried, self._usage)
        totals = {k: v for k, v in usage.items() if isinstance(v, int)} if isinstance(usage, dict) else {}
        return {**events.ZERO_USAGE, **totals}


def _input_delta(data: dict[str, Any]) -> str:
    delta = data.get("delta")
    use = delta.get("toolUse") if isinstance(delta, dict) else None
    piece = use.get("input") if isinstance(use, dict) else None
    return piece if isinstance(piece, str) else ""


# --- a complete stream --------------------------------------------------------------------------


def stream_answer(stream: bytes) -> Answer | None:
    """What a complete client-bound stream answers; None when it holds an exception or nothing."""
    texts: list[str] = []
    calls = seen = False
    for name, data in events.read(stream):
        if not isinstance(name, str) or not isinstance(data, dict) or name.endswith("Exception"):
            return None
        seen = seen or name == "messageStart"
        if name == "contentBlockStart":
            start = data.get("start")
            calls = calls or (isinstance(start, dict) and "toolUse" in start)
        elif name == "contentBlockDelta":
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("text"), str):
                texts.append(delta["text"])
    return Answer(calls, "".join(texts)) if seen else None


def stream_prepend_text(stream: bytes, text: str) -> bytes:
    """``text`` (and a blank line) as a first text block, every later block numbered on."""
    decoder = FrameDecoder()
    out: list[bytes] = []
    lead = events.text_block(0, text + "\n\n")
    for found in [*decoder.feed(stream), *decoder.flush()]:
        data = _payload(found)
        if lead and found.event != "messageStart":
            out += lead
            lead = []
        if found.event in _BLOCK_EVENTS and isinstance(data, dict) and isinstance(data.get("contentBlockIndex"), int):
            out.append(events.event(found.event or "", {**data, "contentBlockIndex": data["contentBlockIndex"] + 1}))
        else:
            out.append(found.raw)
    return b"".join(out + lead)


def _payload(found: SSEEvent) -> Any:
    try:
        return codec.loads(found.data) if found.data is not None else None
    except codec.DecodeError:
        return None
