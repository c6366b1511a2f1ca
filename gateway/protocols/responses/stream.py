"""Relay a Responses event stream while holding each tool call until it has been judged.

Text deltas, reasoning and every other event go to the client at once. A tool call's events
(``response.output_item.added`` of a ``function_call`` / ``custom_tool_call`` item, its argument
or input deltas and done event, its ``response.output_item.done``) are held until the call is
complete (its item is done, the response closes, or the stream ends) and judged; then they are
released as their original bytes, or left out. Events arriving behind a held call wait behind
it, so the client sees every event in the upstream's order. The first refused call drops itself
and every later call of the round. When every call was dropped, the closing event
(``response.completed`` / ``incomplete`` / ``failed``) is withheld and the pipeline decides:
re-ask and relay the new stream as the rest of this one (its ``response.created`` and
``response.in_progress`` left out), or terminate with a final message.

Numbering: the client sees ``sequence_number`` 0, 1, 2 ... and ``output_index`` 0, 1, 2 ...
without gaps, whatever was left out or appended; an event whose numbers already match is relayed
byte for byte, so a stream the gateway does not change reaches the client unchanged. Once the
stream was changed, a closing response's ``output`` lists what the client was shown: the items
of earlier rounds, then this round's without the dropped calls.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.protocols.chat.rounds import Judge, RoundState
from gateway.protocols.sse import SSEDecoder, SSEEvent, comment
from gateway.protocols.responses import events as wire
from gateway.protocols.responses.parse import CALL_TYPES, call_from_item
from gateway.protocols.responses.replies import response_object
from gateway.trace.model import ToolCall

_CLOSING = frozenset({"response.completed", "response.incomplete", "response.failed"})
_OPENING = ("response.created", "response.in_progress")
_KEEPALIVE = comment("holding")


@dataclass(slots=True)
class _Call:
    """One tool call item and its held events; ``position``/``to_call`` are what RoundState judges."""

    position: int
    item: dict[str, Any]
    events: list[tuple[dict[str, Any], bytes]] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)  # argument / input deltas
    done: bool = False
    kept: bool = False
    released: bool = False  # its held events went out (or were dropped)

    def to_call(self) -> ToolCall:
        item = self.item
        if not item.get("arguments" if item.get("type") == "function_call" else "input") and self.parts:
            key = "arguments" if item.get("type") == "function_call" else "input"
            item = {**item, key: "".join(self.parts)}
        return call_from_item(item) or ToolCall(str(item.get("call_id") or ""), "", "")


@dataclass(slots=True)
class _Event:
    obj: dict[str, Any] | None  # None: not JSON, relayed as it is
    raw: bytes


class ResponsesStreamFilter:
    """Feed upstream bytes in, write the returned bytes to the client, in order."""

    def __init__(self, judge: Judge, keepalive_s: float | None = 15.0,
                 on_custom: Callable[[set[str]], None] | None = None,
                 on_withheld: Callable[[str, list[ToolCall]], None] | None = None,
                 on_alias: Callable[[str, str], None] | None = None) -> None:
        self._judge = judge
        self._keepalive_s = keepalive_s  # long arguments: keep idle-timeout proxies from cutting
        self.rounds: list[RoundState] = []
        self.response: dict[str, Any] | None = None  # the latest response object the upstream sent
        self.closing: dict[str, Any] | None = None  # the upstream's last closing response
        self.reply: dict[str, Any] | None = None  # the closing response the client got
        self._on_withheld = on_withheld  # (response id, calls the upstream proposed there but the client never saw)
        self._on_alias = on_alias  # (the client's response id, the upstream's id for what it got)
        self._client_id: str | None = None  # the response id the client's stream started with
        self.custom_ids: set[str] = set()  # call ids of custom tool calls seen
        self._on_custom = on_custom
        self._seq = 0  # the client's next sequence_number
        self._items = 0  # the client's next output_index
        self._shown: list[Any] = []  # finished items the client was shown, in its order
        self._earlier: list[Any] = []  # of them, those shown before the current round
        self._usage: dict[str, Any] | None = None  # usage of dropped rounds, added to the next
        self._withheld: dict[str, Any] | None = None
        self._altered = self._continuation = self._started = False
        self._saw_done = self._terminated = self._final = False
        self._new_round()

    # --- driving ------------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        for event in self._decoder.feed(data):
            self._on_event(event, out)
        self._release(out)
        if self._queue:
            self._keepalive(out)
        return out

    def end_upstream(self) -> list[bytes]:
        out: list[bytes] = []
        if self.round.ended:
            return out
        for event in self._decoder.flush():
            self._on_event(event, out)
        self._settle(list(self._open.values()))
        self._release(out)
        self.round.ended = True
        return out

    def begin_continuation(self) -> None:
        self._continuation = True
        self._saw_done = False
        self._earlier = list(self._shown)
        self._add_usage(self._withheld)
        self._withheld = None
        self._new_round()

    def terminate(self, text: str, model: str = "") -> list[bytes]:
        """End the client stream with ``text`` as a final message (call ``final`` next)."""
        self.round.finish_withheld = False
        self.round.ended = True
        self._queue.clear()
        self._terminated = self._altered = True
        base = self._withheld or self.response or response_object({"model": model}, [], "in_progress")
        out: list[bytes] = []
        if not self._started:  # nothing reached the client yet: open the stream first
            for kind in _OPENING:
                out.append(self._write({"type": kind, "sequence_number": 0, "response": base}))
        events, _ = wire.text_message_events(text, self._items, self._seq)
        out += [self._write(event) for event in events]
        closing = {**base, "status": "completed", "output": self._shown, "error": None,
                   "incomplete_details": None, **self._identity(base)}
        closing["usage"] = self._summed(closing.get("usage"))
        out.append(self._write({"type": "response.completed", "sequence_number": 0, "response": closing}))
        self._sent_closing(closing)
        return out

    def final(self) -> list[bytes]:
        """The client stream is over: a withheld closing event nobody decided on, then the
        upstream's ``[DONE]`` (some compatible servers send one), each once."""
        if self._final:
            return []
        out = self.end_upstream()
        if self.needs_decision and self._withheld is not None:
            out.append(self._closing_bytes(self._withheld_event, b""))
        self._final = True
        if self._saw_done:
            out.append(b"data: [DONE]\n\n")
        return out

    # --- state for the pipeline -----------------------------------------------------------------

    @property
    def round(self) -> RoundState:
        return self.rounds[-1]

    @property
    def needs_decision(self) -> bool:
        state = self.round
        decided = self._terminated or self._final
        return state.all_dropped and (state.finish_withheld or state.ended) and not decided

    # --- events ---------------------------------------------------------------------------------

    def _new_round(self) -> None:
        self._decoder = SSEDecoder()
        self._index: dict[int, int] = {}  # upstream output_index -> the client's
        self._open: dict[int, _Call] = {}  # calls not judged yet, by upstream output_index
        self._calls: dict[int, _Call] = {}  # every call of the round, by upstream output_index
        self._queue: deque[_Call | _Event] = deque()
        self._hold_mark = 0.0
        self._withheld_event: dict[str, Any] = {}
        self.rounds.append(RoundState())

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        data = event.data
        if data is None:  # comments: nothing to order against
            out.append(event.raw)
            return
        if data == "[DONE]":
            self._saw_done = True  # withheld: a continuation may follow
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self._queue.append(_Event(None, event.raw))
            return
        kind = obj.get("type")
        index = obj.get("output_index")
        if kind == "response.output_item.added" and _is_call(obj.get("item")):
            self._start_call(obj, event.raw, index)
        elif type(index) is int and index in self._calls and not self._calls[index].released:
            self._call_event(self._calls[index], obj, event.raw, kind)
        elif type(index) is int and index in self._calls:
            if self._calls[index].kept:  # a straggler after the call went out: follows it
                self._queue.append(_Event(obj, event.raw))
        elif kind in _CLOSING:
            self._close(obj, event.raw)
        else:
            if kind in _OPENING and isinstance(obj.get("response"), dict):
                self.response = obj["response"]
                if self._client_id is None and isinstance(self.response.get("id"), str):
                    self._client_id = self.response["id"]
            self._queue.append(_Event(obj, event.raw))

    def _start_call(self, obj: dict[str, Any], raw: bytes, index: Any) -> None:
        item = obj["item"]
        call = _Call(len(self._calls), dict(item), [(obj, raw)])
        if item.get("type") == "custom_tool_call" and isinstance(item.get("call_id"), str):
            self.custom_ids.add(item["call_id"])
            if self._on_custom is not None:
                self._on_custom({item["call_id"]})
        key = index if type(index) is int else -1 - len(self._calls)
        self._calls[key] = self._open[key] = call
        if not self._queue:
            self._hold_mark = time.monotonic()
        self._queue.append(call)

    def _call_event(self, call: _Call, obj: dict[str, Any], raw: bytes, kind: Any) -> None:
        call.events.append((obj, raw))
        if call.done:
            return  # an event after the call was judged: it follows the judgement
        delta = obj.get("delta")
        if isinstance(delta, str) and kind in ("response.function_call_arguments.delta",
                                               "response.custom_tool_call_input.delta"):
            call.parts.append(delta)
        elif kind == "response.output_item.done" and isinstance(obj.get("item"), dict):
            call.item = obj["item"]
            self._settle([call])

    def _close(self, obj: dict[str, Any], raw: bytes) -> None:
        self._settle(list(self._open.values()))
        response = obj.get("response")
        if isinstance(response, dict):
            self.response = self.closing = response
        state = self.round
        state.finish_reason = obj.get("type")
        if state.all_dropped:
            state.finish_withheld = True
            self._withheld, self._withheld_event = (response if isinstance(response, dict) else None), obj
            return
        self._queue.append(_Event(obj, raw))

    # --- judging and releasing ------------------------------------------------------------------

    def _settle(self, calls: list[_Call]) -> None:
        state = self.round
        for call in calls:
            if call.done:
                continue
            call.done = True
            before = len(state.kept)
            state.settle((call,), self._judge, 0)
            call.kept = len(state.kept) > before
        self._open = {k: c for k, c in self._open.items() if not c.done}

    def _release(self, out: list[bytes]) -> None:
        queue = self._queue
        while queue:
            head = queue[0]
            if isinstance(head, _Call):
                if not head.done:
                    return
                queue.popleft()
                head.released = True
                if head.kept:
                    out.extend(self._emit(obj, raw) for obj, raw in head.events)
                else:
                    self._altered = True
                continue
            queue.popleft()
            if head.obj is None:
                out.append(head.raw)
            elif self._continuation and head.obj.get("type") in _OPENING:
                self._altered = True  # the re-ask continues the client's response: no second start
            else:
                out.append(self._emit(head.obj, head.raw))

    def _emit(self, obj: dict[str, Any], raw: bytes) -> bytes:
        """The event with the client's numbering; its own bytes when they already match."""
        kind = obj.get("type")
        if kind in _CLOSING:
            return self._closing_bytes(obj, raw)
        self._started = True
        changed = False
        index = obj.get("output_index")
        if type(index) is int:
            mine = self._index.get(index)
            if mine is None:
                mine = self._index[index] = self._items
                self._items += 1
            if mine != index:
                obj, changed = {**obj, "output_index": mine}, True
        obj, renumbered = self._numbered(obj)
        if kind == "response.output_item.done":
            self._shown.append(obj.get("item"))
        return wire.encode(obj) if changed or renumbered else raw

    def _closing_bytes(self, obj: dict[str, Any], raw: bytes) -> bytes:
        response = obj.get("response")
        if (self._altered or self._usage is not None) and isinstance(response, dict):
            response = {**response, "output": self._closing_output(response), **self._identity(response)}
            response["usage"] = self._summed(response.get("usage"))
            obj, raw = {**obj, "response": response}, b""
        obj, renumbered = self._numbered(obj)
        self._sent_closing(obj.get("response"))
        return raw if raw and not renumbered else wire.encode(obj)

    def _closing_output(self, response: dict[str, Any]) -> list[Any]:
        output = response.get("output")
        dropped = {c.id for c in self.round.dropped if c.id}
        mine = [item for item in output if not (_is_call(item) and item.get("call_id") in dropped)] \
            if isinstance(output, list) else self._shown[len(self._earlier):]
        return [*self._earlier, *mine]

    def _numbered(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        seq = obj.get("sequence_number")
        if seq is None:
            return obj, False
        mine, self._seq = self._seq, self._seq + 1
        return (obj, False) if seq == mine and type(seq) is int else ({**obj, "sequence_number": mine}, True)

    def _write(self, obj: dict[str, Any]) -> bytes:
        """An event the gateway writes itself, numbered next."""
        self._started = True
        obj["sequence_number"] = self._seq
        self._seq += 1
        if obj.get("type") == "response.output_item.done":
            self._items += 1
            self._shown.append(obj["item"])
        return wire.encode(obj)

    def _identity(self, response: dict[str, Any]) -> dict[str, Any]:
        """One response for the client from first event to last (its SDK checks the id): a
        re-ask's closing response wears the first id; the upstream's id is reported."""
        upstream = response.get("id")
        if self._client_id is None or upstream == self._client_id:
            return {}
        if isinstance(upstream, str) and self._on_alias is not None:
            self._on_alias(self._client_id, upstream)
        return {"id": self._client_id}

    def _sent_closing(self, response: Any) -> None:
        """The client got this closing response: a later request may continue it by id, and
        the upstream then still expects outputs for the calls of this round it never saw."""
        if not isinstance(response, dict):
            return
        self.reply = response
        dropped = self.round.dropped
        if dropped and self._on_withheld is not None and isinstance(response.get("id"), str):
            self._on_withheld(response["id"], list(dropped))

    def _add_usage(self, response: dict[str, Any] | None) -> None:
        usage = response.get("usage") if isinstance(response, dict) else None
        if isinstance(usage, dict):
            self._usage = _sum_usage(self._usage, usage)

    def _summed(self, usage: Any) -> Any:
        if self._usage is None:
            return usage
        return _sum_usage(self._usage, usage) if isinstance(usage, dict) else self._usage

    def _keepalive(self, out: list[bytes]) -> None:
        if self._keepalive_s is None:
            return
        now = time.monotonic()
        if now - self._hold_mark >= self._keepalive_s:
            out.append(_KEEPALIVE)
            self._hold_mark = now


def _is_call(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in CALL_TYPES


def _sum_usage(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Token counts of two responses added up (nested details too), so the client sees all."""
    if a is None:
        return b
    out = dict(b)
    for key, value in a.items():
        other = b.get(key)
        if isinstance(value, int) and isinstance(other, int):
            out[key] = value + other
        elif isinstance(value, dict) and isinstance(other, dict):
            out[key] = _sum_usage(value, other)
    return out
