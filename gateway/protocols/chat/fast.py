"""The chat filter's fast paths, behind one seam: ``FastToolCallFilter`` is ``ToolCallFilter``
reading the bytes it can without decoding and parsing every event. The client gets the same
bytes either way; ``StreamOptions.fast_paths`` (config ``streaming.fast_paths``) switches them
off, and the stream tests run both ways.

- A read of whole events with nothing to hold or withhold (most reads) is relayed as it came,
  unread; a read of whole events is split at C speed (``sse.whole_parts``) and events that need
  no reading are relayed undecoded (``_on_raw``).
- Argument-only events of an open call are read by their bytes (``chat/arguments.py``).
- A read that holds the whole rest of a stream is judged in one pass and relayed as it came
  when every call is kept (``chat/whole.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.protocols.chat import whole
from gateway.protocols.chat.arguments import around, is_argument_entry, text_between
from gateway.protocols.chat.assembler import PartialCall
from gateway.protocols.chat.stream import ToolCallFilter, _Held
from gateway.protocols.judged_round import RoundState
from gateway.protocols.sse import DONE, SSEEvent, event_of, whole_parts

__all__ = ["FastToolCallFilter"]

_TOOL_KEYS = (b'"tool_calls"', b'"function_call"')
_DONE_LINE = DONE[:-2]


@dataclass(slots=True)
class _Arguments:
    """The bytes around the argument text of an event that only adds arguments to one open call
    (``{"index": k, "function": {"arguments": "..."}}``, nothing else in its choice). A model
    streams a call's arguments as a run of such events that differ only in that text, so the
    next ones are read by matching these bytes and decoding the text between them: one small
    JSON string instead of a whole chunk and its dicts. Matching is exact: an event with any
    other byte outside the text, or whose middle is not one JSON string, is read in full."""

    prefix: bytes  # the event up to the text's opening quote
    suffix: bytes  # from after its closing quote to the end of the event
    call: PartialCall
    key: Any  # the entry's ``index``
    chunk: dict[str, Any]  # the first event's: the same head as every event matching it
    choice: dict[str, Any]


class FastToolCallFilter(ToolCallFilter):
    """``ToolCallFilter`` with the fast paths (see the module)."""

    def _start_round(self) -> None:
        super()._start_round()
        self._fast = False  # nothing held, nothing watched: events without tool calls go out unread
        self._arguments: _Arguments | None = None

    def feed(self, data: bytes) -> list[bytes]:
        raws = None
        if self._decoder.idle:
            if (
                self._fast
                and data.endswith(b"\n\n")
                and b"_call" not in data  # covers both tool-call keys in one scan
                and b"[DONE]" not in data
            ):
                # Whole events (a chunk ending in a blank line ends an event, whatever its line
                # endings) with nothing to hold or withhold: most chunks. Relay the chunk as is.
                self._emitted = True
                return [data]
            parts = whole_parts(data)
            if parts is not None:
                if parts[-1] == _DONE_LINE and self._at_round_start():
                    return self._whole_round(data, parts)
                raws = [part + b"\n\n" for part in parts]
        out: list[bytes] = []
        if raws is not None:
            for raw in raws:
                self._on_raw(raw, out)
                if self.failure is not None:  # the event ended the client stream: none after it
                    return out
        else:
            for event in self._decoder.feed(data):
                self._on_event(event, out)
                if self.failure is not None:
                    return out
        if self._held:
            self._held.keepalive(out)
        return out

    def _on_raw(self, raw: bytes, out: list[bytes]) -> None:
        """One whole event of a chunk ``whole_events`` split: what ``_on_event`` does, without
        decoding the events that need no reading."""
        if raw == DONE:
            self._on_done(out)
            return
        simple = raw.startswith(b"data: {") and raw.find(b"\n") == len(raw) - 2  # one data line
        if not simple:
            self._on_event(event_of(raw), out)
        elif self._fast and b"_call" not in raw:
            self._relay(raw, out)
        elif self._arguments is None or not self._add_arguments(raw, self._arguments):
            try:  # the data as bytes: the event's decoded text only for what orjson refuses
                self._on_data(orjson.loads(raw[6:-2]), raw, out)
            except orjson.JSONDecodeError:
                self._on_event(event_of(raw), out)

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        data, raw = event.data, event.raw
        if data is not None and event.event != "error" and data != "[DONE]":
            if self._fast and _TOOL_KEYS[0] not in raw and _TOOL_KEYS[1] not in raw:
                self._relay(raw, out)
                return
            if self._arguments is not None and self._add_arguments(raw, self._arguments):
                return
        super()._on_event(event, out)

    def _on_data(self, chunk: Any, raw: bytes, out: list[bytes]) -> None:
        """``ToolCallFilter._on_data``, then whether the next events can go out unread (written
        out, not a ``super()`` call: this runs for every parsed event)."""
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            self._relay(raw, out)
            return
        self._on_chunk(chunk, raw, out)
        watching = self._continuation or self._asm.open or self._held or self.round.finish_withheld
        self._fast = self.envelope is not None and not watching

    def _hold(
        self, chunk: dict[str, Any], raw: bytes, choice: dict[str, Any], delta: dict[str, Any], out: list[bytes]
    ) -> _Held:
        held = super()._hold(chunk, raw, choice, delta, out)
        self._arguments = None if self._continuation else _arguments_of(raw, held)
        return held

    def _add_arguments(self, raw: bytes, known: _Arguments) -> bool:
        """An event that only adds argument text to the open call ``known`` describes: held
        with that call, as ``_hold`` would hold it. False: read it in full."""
        call = known.call
        text = None if call.done else text_between(raw, known.prefix, known.suffix)
        if text is None:
            return False
        if text:
            call.parts.append(text)
        entry = {"index": known.key, "function": {"arguments": text}}
        self._held.append(_Held(raw, known.chunk, known.choice, [(entry, call)], {}, None, True))
        return True

    # --- a whole round in one read (see chat/whole.py) -------------------------------------------

    def _at_round_start(self) -> bool:
        state = self.round
        return not (
            self._held
            or self._asm.calls
            or self._continuation
            or self._saw_done
            or self._terminated
            or self._held_usage is not None
            or state.kept
            or state.dropped
            or state.finish_reason
        )

    def _whole_round(self, data: bytes, parts: list[bytes]) -> list[bytes]:
        """The rest of the stream in one read: judged in one pass, relayed as it came when every
        call is kept under its own index; else read event by event with the same verdicts."""
        found = whole.scan(parts, self.envelope)
        judge = self._judge
        out: list[bytes] = []
        raws = [part + b"\n\n" for part in parts]
        if found is None:
            for raw in raws:
                self._on_raw(raw, out)
            return out
        given, recording = whole.Verdicts.recording(judge)
        state = RoundState(finish_reason=found.finish_reason)
        next_index = state.settle(found.completed, recording, self._next_index)
        index = state.out_index
        if not state.dropped and all(
            entry.get("index") == index.get(call.position, -1) for entry, call in found.entries
        ):
            state.interleaved = any(call.late for call in found.assembler.calls)
            self.rounds[-1], self._asm, self._next_index, self.envelope = (
                state,
                found.assembler,
                next_index,
                found.envelope,
            )
            self._emitted = self._saw_done = self._done_sent = self._fast = True
            self._arguments = None
            return [data]
        self._judge = whole.Verdicts(given, judge)
        try:
            for raw in raws:
                self._on_raw(raw, out)
        finally:
            self._judge = judge
        return out


def _arguments_of(raw: bytes, held: _Held) -> _Arguments | None:
    """The bytes around the argument text of ``held``, when it is an event that only adds
    arguments to one open call (``chat/arguments.py``)."""
    entries = held.entries
    if len(entries) != 1 or held.rest or held.usage is not None or not held.raw_ok or not raw.endswith(b"\n\n"):
        return None
    entry, call = entries[0]
    if call.done or call.legacy or held.choice.get("finish_reason") is not None or not is_argument_entry(entry):
        return None
    found = around(raw, len(raw) - 2, entry["function"]["arguments"])
    if found is None:
        return None
    return _Arguments(found[0], found[1], call, entry["index"], held.chunk, held.choice)
