"""Relay a chat-completions SSE stream while holding each tool call until it has been judged.

Content goes to the client as soon as it arrives; tool-call deltas of choice 0 are held until
their call is complete, judged by a synchronous callback, then either emitted (one chunk per call,
client-side ``index`` renumbered from 0 so dropped calls leave no gap) or dropped together with
every later call of the round (seed 000: abort the rest of the round). When every call was
dropped, the finish chunk is withheld and the pipeline decides: re-ask the model and relay its
answer as a continuation of the same client stream, or end the stream with a terminate text.

Choices other than 0 (``n > 1``, never used by agents) pass through unjudged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.protocols.chat.assembler import PartialCall, ToolCallAssembler
from gateway.protocols.chat.chunks import (
    Envelope,
    add_usage,
    call_delta,
    content_chunk,
    finish_chunk,
    late_delta,
    usage_chunk,
    with_delta,
)
from gateway.protocols.chat.sse import DONE, SSEDecoder, SSEEvent, data_event
from gateway.trace.model import ToolCall

__all__ = ["Judge", "RoundState", "ToolCallFilter", "ToolCallAssembler", "content_chunk", "finish_chunk"]

Judge = Callable[[ToolCall, int], bool]  # (call, position in the round) -> keep?

_TOOL_KEYS = (b'"tool_calls"', b'"function_call"')
_NOT_DELTA = frozenset({"tool_calls", "function_call"})


@dataclass(slots=True)
class RoundState:
    """Choice 0's tool calls in one upstream stream, as judged."""

    kept: list[ToolCall] = field(default_factory=list)
    dropped: list[ToolCall] = field(default_factory=list)  # the rejected call and all after it
    rejected: ToolCall | None = None
    rejected_position: int | None = None
    finish_reason: str | None = None  # as the upstream sent it
    finish_withheld: bool = False
    ended: bool = False  # the upstream stream is over
    judge_errors: list[Exception] = field(default_factory=list)  # judge raised: call kept

    @property
    def all_dropped(self) -> bool:
        return bool(self.dropped) and not self.kept


class ToolCallFilter:
    """Feed upstream bytes in, write the returned bytes to the client, in order."""

    def __init__(self, judge: Judge, envelope: Envelope | None = None) -> None:
        self._judge = judge
        self.envelope = envelope  # of the client stream: taken from the first upstream chunk
        self.rounds: list[RoundState] = []
        self._next_index = 0  # client-side tool-call index, continues across continuations
        self._continuation = False
        self._held_usage: dict[str, Any] | None = None
        self._saw_done = self._terminated = self._final = self._emitted = False
        self._new_round()

    # --- driving ------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[bytes]:
        if (
            self._fast
            and data.endswith(b"\n\n")
            and self._decoder.idle
            and b"_call" not in data  # covers both tool-call keys in one scan
            and b"[DONE]" not in data
        ):
            # Whole events (a chunk ending in a blank line ends an event, whatever its line
            # endings) with nothing to hold or withhold: most chunks. Relay the chunk as is.
            self._emitted = True
            return [data]
        out: list[bytes] = []
        for event in self._decoder.feed(data):
            self._on_event(event, out)
        return out

    def end_upstream(self) -> list[bytes]:
        """The upstream stream ended: judge and emit the calls still open."""
        out: list[bytes] = []
        if self.round.ended:
            return out
        for event in self._decoder.flush():
            self._on_event(event, out)
        self._emit(self._settle(self._asm.close(), self._head or self._env_head()), out)
        self.round.ended = True
        return out

    def begin_continuation(self) -> None:
        """Relay a new upstream stream (the re-ask) as the rest of the same client stream."""
        self._continuation = True
        self._saw_done = False
        self._new_round()

    def terminate(self, text: str, model: str = "") -> list[bytes]:
        """End the client stream with ``text`` and finish_reason "stop" (call ``final`` next)."""
        env = self.envelope or Envelope.new(model)
        self.round.finish_withheld = False
        self._terminated = True
        chunks = [content_chunk(env, text, role=not self._emitted), finish_chunk(env, "stop")]
        return [data_event(chunk) for chunk in chunks]

    def final(self) -> list[bytes]:
        """The client stream is over: held usage, then ``[DONE]`` once (if the upstream sent it)."""
        if self._final:
            return []
        out = self.end_upstream()
        if self.needs_decision:  # nobody decided: never leave the client without a finish
            out.append(data_event(finish_chunk(self.envelope or Envelope.new(""), "stop")))
        self._final = True
        if self._held_usage is not None:
            out.append(data_event(usage_chunk(self.envelope or Envelope.new(""), self._held_usage)))
            self._held_usage = None
        if self._saw_done or self._terminated:
            out.append(DONE)
        return out

    # --- state for the pipeline -----------------------------------------------------------

    @property
    def round(self) -> RoundState:
        return self.rounds[-1]

    @property
    def needs_decision(self) -> bool:
        """Every call of this round was dropped: re-ask (``begin_continuation``) or ``terminate``."""
        state = self.round
        decided = self._terminated or self._final
        return state.all_dropped and (state.finish_withheld or state.ended) and not decided

    # --- internals ------------------------------------------------------------------------

    def _new_round(self) -> None:
        self._decoder = SSEDecoder()
        self._asm = ToolCallAssembler()
        self._out_index: dict[int, int] = {}
        self._head: dict[str, Any] | None = None
        self._fast = False
        self.rounds.append(RoundState())

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        data, raw = event.data, event.raw
        if data is None or event.event == "error":
            out.append(raw)
            return
        if data == "[DONE]":
            self._saw_done = True  # withheld: a continuation may follow
            return
        if self._fast and _TOOL_KEYS[0] not in raw and _TOOL_KEYS[1] not in raw:
            self._relay(raw, out)
            return
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            chunk = None
        if not isinstance(chunk, dict) or "error" in chunk or not isinstance(chunk.get("choices"), list):
            self._relay(raw, out)
            return
        self._on_chunk(chunk, raw, out)
        self._fast = self._can_skip()

    def _can_skip(self) -> bool:
        """Whether an event without tool-call keys can be relayed without being parsed."""
        watching = self._continuation or self._asm.open or self.round.finish_withheld
        return self.envelope is not None and not watching

    def _relay(self, raw: bytes, out: list[bytes]) -> None:
        self._emitted = True
        out.append(raw)

    def _on_chunk(self, chunk: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        if self.envelope is None:
            self.envelope = Envelope.from_chunk(chunk)
        changed = self._continuation
        if changed:  # one completion for the client: the re-ask wears the first stream's id
            chunk["id"], chunk["created"] = self.envelope.id, self.envelope.created
        self._head = head = {k: v for k, v in chunk.items() if k != "choices"}
        if "usage" in head:
            head["usage"] = None
        choices: list[Any] = []
        after: list[dict[str, Any]] = []
        for choice in chunk["choices"]:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                kept, pieces, touched = self._choice0(choice, head)
                changed |= touched
                after += pieces
                if kept is not None:
                    choices.append(kept)
            else:
                choices.append(choice)
        usage, usage_changed = self._usage(chunk.get("usage"))
        if not (changed or usage_changed):
            self._relay(raw, out)
            return
        # Drop the chunk itself only when everything in it was taken out (held or re-emitted).
        emptied = (not choices and bool(chunk["choices"])) or (usage_changed and usage is None)
        pieces = [{**chunk, "choices": choices}] if choices or usage is not None or not emptied else []
        pieces += after
        for piece in pieces:  # the SDK keeps the usage of the last chunk it saw
            if "usage" in piece or usage is not None:
                piece["usage"] = None
        if pieces and usage is not None:
            pieces[-1]["usage"] = usage
        self._emit(pieces, out)

    def _choice0(self, choice: dict[str, Any], head: dict[str, Any]) -> tuple[Any, list[dict], bool]:
        """Split a choice into what goes out now, and the judged tool calls and finish."""
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        tools, legacy = delta.get("tool_calls"), delta.get("function_call")
        finish = choice.get("finish_reason")
        strip_role = self._continuation and "role" in delta
        if tools is None and legacy is None and not strip_role and not (finish and self._asm.calls):
            return choice, [], False
        completed = self._asm.add(tools) if tools is not None else []
        if legacy is not None:
            completed += self._asm.add_legacy(legacy)
        if finish:
            completed += self._asm.close()
        pieces = self._settle(completed, head)
        if finish:
            pieces += self._finish(choice, finish, head)
        rest = {k: v for k, v in delta.items() if k not in _NOT_DELTA and not (strip_role and k == "role")}
        if any(v is not None and v != "" for v in rest.values()) or choice.get("logprobs") is not None:
            return {**choice, "delta": rest, "finish_reason": None}, pieces, True
        return None, pieces, True

    def _finish(self, choice: dict[str, Any], reason: str, head: dict[str, Any]) -> list[dict]:
        state = self.round
        state.finish_reason = reason
        if state.all_dropped:
            state.finish_withheld = True
            return []
        return [{**head, "choices": [{**choice, "delta": {}, "logprobs": None}]}]

    def _settle(self, completed: list[PartialCall], head: dict[str, Any]) -> list[dict]:
        """Judge completed calls in order; the first rejection drops the rest of the round."""
        state, pieces = self.round, []
        for call in completed:
            tool_call = call.to_call()
            if state.rejected is None and self._keep(tool_call, call.position):
                self._out_index[call.position] = index = self._next_index
                self._next_index += 1
                state.kept.append(tool_call)
                pieces.append(with_delta(head, call_delta(call, index)))
                continue
            if state.rejected is None:
                state.rejected, state.rejected_position = tool_call, call.position
            state.dropped.append(tool_call)
        for call, fragment in self._asm.late:  # deltas arriving after their call was judged
            if call.position in self._out_index:
                pieces.append(with_delta(head, late_delta(call, fragment, self._out_index[call.position])))
        self._asm.late.clear()
        return pieces

    def _keep(self, call: ToolCall, position: int) -> bool:
        try:
            return bool(self._judge(call, position))
        except Exception as exc:  # fail-open: a broken judge must never break the stream
            self.round.judge_errors.append(exc)
            return True

    def _usage(self, usage: Any) -> tuple[Any, bool]:
        """Usage of a dropped round is held and added to the next one, so the client sees all."""
        if usage is None:
            return None, False
        if self.round.finish_withheld:
            self._held_usage = add_usage(self._held_usage, usage)
            return None, True
        if self._held_usage is not None:
            usage, self._held_usage = add_usage(self._held_usage, usage), None
            return usage, True
        return usage, False

    def _emit(self, pieces: list[dict], out: list[bytes]) -> None:
        for piece in pieces:
            self._emitted = True
            out.append(data_event(piece))

    def _env_head(self) -> dict[str, Any]:
        return (self.envelope or Envelope.new("")).chunk([])
