"""A chat stream with several choices (``n > 1``): every choice's tool calls judged.

Each choice is another answer to the same history, so each is judged on its own. The calls of
one choice arrive interleaved with the others', so the stream is held whole until it ends, then
released: byte for byte when nothing was refused, else with each refused call (and the later
calls of its choice) left out, and a choice left without calls finishing with "stop".

As for a unary reply with several choices, the pipeline decides only when the whole round is
refused (every choice proposed calls and lost all of them): nothing of the stream was sent, so
it is withheld whole (``needs_decision``) and replaced by the re-ask (``begin_continuation``:
the next stream is held and judged the same way) or by the run's end (``terminate``: the
template in every choice). A round where some choice keeps its answer is released without the
refused calls and is not re-asked (a re-ask would answer every choice again).

A final answer is written with tools closed (the judge refuses every call, and says so with a
true ``closed`` attribute): a choice calling a tool there fails the whole answer, as a unary
one does, so it is withheld whole too and every choice gets the template instead.
Agents do not ask for several choices; this is about never letting a call through unjudged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.chat.assembler import PartialCall, ToolCallAssembler
from gateway.protocols.chat.chunks import Envelope, content_chunk, finish_chunk
from gateway.protocols.chat.stream import failed_events
from gateway.protocols.sse import DONE, SSEEvent, data_event, json_events
from gateway.protocols.streaming import StreamDriver
from gateway.trace.model import ToolCall


@dataclass(slots=True)
class _Event:
    raw: bytes
    chunk: dict[str, Any] | None
    entries: list[tuple[int, dict[str, Any], PartialCall]] = field(default_factory=list)  # choice, entry, call


class ChoicesFilter(StreamDriver):
    holds_whole = True  # nothing reaches the client before every call is judged (see above)

    def __init__(self, judge: Judge, model: str = "", options: StreamOptions | None = None, choices: int = 2) -> None:
        self._model = model
        self._choices = choices  # the client's n: a termination answers in each
        # The last withheld round without its refused calls: what the client gets when nothing
        # replaces it (a re-ask that failed), so its stream still ends well-formed.
        self._withheld: list[bytes] | None = None
        super().__init__(judge, options)

    @property
    def needs_decision(self) -> bool:
        """The whole round was refused and is held: re-ask or terminate."""
        return self.round.finish_withheld and not (self._terminated or self._final)

    # --- the driver's hooks: every event is held until the stream ends ----------------------

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        if event.data == "[DONE]":
            self._saw_done = True
        self._held.hold(event.raw)

    failure_event = "error_chunk"

    def _failed(self, failure: Any) -> list[bytes]:
        return failed_events(failure)

    def _complete(self) -> bool:
        return self._saw_done

    def _close_held(self, out: list[bytes]) -> None:
        """The stream ended: judge every choice, then release it, or withhold it whole."""
        data = b"".join(self._held)
        self._held.clear()
        events = _events(data)
        keep = self._judge_choices(events)
        if all(keep[c] is None for c in keep):
            if data:
                self._withheld = None  # replaced: a re-ask answered
                out.append(data)
            return
        rebuilt = [_rebuilt(event, keep) for event in events]
        if all(n == 0 for n in keep.values()) or getattr(self._judge, "closed", False):
            self.round.finish_withheld = True  # nothing was sent: the pipeline replaces it whole
            self._withheld = rebuilt
            return
        self._withheld = None
        out += rebuilt

    def _cut(self, upstream: bytes) -> list[bytes]:
        """Nothing was relayed yet (the stream is held whole): nothing to close, nothing to keep."""
        self._held.clear()
        return []

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        """The template in every choice."""
        self._withheld = None
        env = Envelope.new(self._model)
        return [
            *(
                data_event(chunk)
                for index in range(self._choices)
                for chunk in (content_chunk(env, text, role=True, index=index), finish_chunk(env, "stop", index))
            ),
            DONE,
        ]

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        if not out and self._withheld is not None:  # nothing replaced the withheld round
            out += self._withheld
            self._withheld = None

    def _judge_choices(self, events: list[_Event]) -> dict[int, int | None]:
        """Each choice's number of kept calls, or None when it keeps them all."""
        assemblers: dict[int, ToolCallAssembler] = {}
        for event in events:
            for index, choice in _choices(event.chunk):
                delta = choice.get("delta")
                if not isinstance(delta, dict):
                    continue
                asm = assemblers.setdefault(index, ToolCallAssembler())
                tools, legacy = delta.get("tool_calls"), delta.get("function_call")
                for entry in tools if isinstance(tools, list) else ():
                    if isinstance(entry, dict):
                        event.entries.append((index, entry, asm.add_entry(entry)[0]))
                if isinstance(legacy, dict):
                    event.entries.append((index, legacy, asm.add_legacy(legacy)[0]))
        keep: dict[int, int | None] = {}
        for index, asm in sorted(assemblers.items()):
            keep[index] = self._judge_one(index, [call.to_call() for call in asm.calls])
        return keep

    def _judge_one(self, index: int, calls: list[ToolCall]) -> int | None:
        state = self.round
        for position, call in enumerate(calls):
            try:
                allowed = bool(self._judge(call, position, index))
            except Exception as exc:  # fail-open: a broken judge must never break the stream
                state.judge_errors.append(exc)
                allowed = True
            if not allowed:
                if state.rejected is None:
                    state.rejected, state.rejected_position = call, position
                state.dropped.extend(calls[position:])
                return position
            state.kept.append(call)
        return None


def _events(data: bytes) -> list[_Event]:
    return [_Event(raw, chunk) for raw, chunk in json_events(data)]


def _choices(chunk: dict[str, Any] | None) -> list[tuple[int, dict[str, Any]]]:
    found = chunk.get("choices") if chunk is not None else None
    if not isinstance(found, list):
        return []
    return [(c.get("index", 0), c) for c in found if isinstance(c, dict) and isinstance(c.get("index", 0), int)]


def _rebuilt(event: _Event, keep: dict[int, int | None]) -> bytes:
    """The event without the dropped calls; untouched (its own bytes) when it loses nothing."""
    chunk = event.chunk
    if chunk is None:
        return event.raw
    touched = {i for i, _ in _choices(chunk) if keep.get(i) is not None}
    if not touched:
        return event.raw
    dropped = {
        id(entry)
        for index, entry, call in event.entries
        if (limit := keep.get(index)) is not None and call.position >= limit
    }
    choices = [_trimmed(c, dropped, keep[i] == 0) if i in touched else c for i, c in _choices(chunk)]
    return data_event({**chunk, "choices": choices})


def _trimmed(choice: dict[str, Any], dropped: set[int], none_left: bool) -> dict[str, Any]:
    delta = dict(choice.get("delta") or {})
    tools = delta.get("tool_calls")
    if isinstance(tools, list):
        kept = [e for e in tools if id(e) not in dropped]
        if kept:
            delta["tool_calls"] = kept
        else:
            delta.pop("tool_calls")
    if id(delta.get("function_call")) in dropped:
        delta.pop("function_call")
    out = {**choice, "delta": delta}
    if none_left and choice.get("finish_reason") in ("tool_calls", "function_call"):
        out["finish_reason"] = "stop"
    return out
