"""Relay a Responses event stream while holding each tool call until it has been judged.

Text deltas, reasoning and every other event go to the client at once (unless ``hold_text``,
below). A tool call's events
(``response.output_item.added`` of a ``function_call`` / ``custom_tool_call`` item, its argument
or input deltas and done event, its ``response.output_item.done``) are held until the call is
complete (its item is done, the response closes, or the stream ends) and judged; then they are
released as their original bytes, or left out. Events arriving behind a held call wait behind
it (a call's events go out as one block, in their order). The first refused call drops itself
and every later call of the round. When every call was dropped, the closing event
(``response.completed`` / ``incomplete`` / ``failed``) is withheld and the pipeline decides:
re-ask and relay the new stream as the rest of this one (its ``response.created`` and
``response.in_progress`` left out), or terminate with a final message.

Holding text (``options.hold_text``, a conversation already at warn level or above): the events
of every other output item of a round (its message text, its reasoning) are held too, in order
with its calls, until the round ends and its calls are judged; a round whose calls were all
refused is never shown, so the stream reads like the non-streamed reply.

What the client sees and how it is numbered is ``view.ClientView``'s: gap-free numbers, one
response id, and once the stream was changed, a closing response listing what it was shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.responses import events as wire
from gateway.protocols.responses.parse import CALL_TYPES, call_from_item
from gateway.protocols.responses.replies import response_object
from gateway.protocols.responses.view import ClientView
from gateway.protocols.sse import SSEEvent
from gateway.protocols.streaming import StreamDriver
from gateway.trace.model import ToolCall

_CLOSING = frozenset({"response.completed", "response.incomplete", "response.failed"})
_OPENING = ("response.created", "response.in_progress")
# Events the filter must read: items opening and closing (calls, the client's shown items), the
# response's opening and closing events, a compatible server's end marker.
_WATCHED = re.compile(
    rb"output_item|function_call|custom_tool_call|response\.c|response\.in|response\.failed"
    rb"|\[DONE\]"
)
_SEQUENCE = re.compile(rb'"sequence_number"\s*:\s*(\d+)')


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
    text: bool = False  # an output item's event held until its round is judged (``hold_text``)


class ResponsesStreamFilter(StreamDriver):
    """Feed upstream bytes in, write the returned bytes to the client, in order.

    ``on_custom`` learns the call ids of custom tool calls, ``on_withheld`` the calls a closing
    response the client got had withheld (the upstream still waits for their outputs), and
    ``on_alias`` the upstream's own id for a re-ask's answer the client knows by the first id,
    ``on_round`` that an upstream round begins (the first stream, and each re-ask's).
    """

    def __init__(
        self,
        judge: Judge,
        options: StreamOptions | None = None,
        on_custom: Callable[[set[str]], None] | None = None,
        on_withheld: Callable[[str, list[ToolCall]], None] | None = None,
        on_alias: Callable[[str, str], None] | None = None,
        model: str = "",
        on_round: Callable[[], None] | None = None,
    ) -> None:
        self._model = model  # for a terminate message before the upstream said anything
        self._on_custom, self._on_withheld, self._on_round = on_custom, on_withheld, on_round
        self.view = ClientView(on_alias)
        self.response: dict[str, Any] | None = None  # the latest response object the upstream sent
        self.closing: dict[str, Any] | None = None  # the upstream's last closing response
        self.custom_ids: set[str] = set()  # call ids of custom tool calls seen
        self._withheld: dict[str, Any] | None = None  # the closing response of an all-dropped round
        super().__init__(judge, options)

    # --- the driver's hooks -------------------------------------------------------------------

    def _passes(self, data: bytes) -> bool:
        """Whole events of text and the like, nothing held, nothing changed so far: most
        chunks. Relayed as they are; only the next sequence number is noted."""
        if not self._plain(data):
            return False
        last = _SEQUENCE.findall(data)
        if last:
            self.view.seq = int(last[-1]) + 1
        self.view.started = True
        return True

    def _cut(self, upstream: bytes) -> list[bytes]:
        for call in self._open.values():  # cut short: never completed on partial input, left out
            call.done, call.kept = True, False
        self._open.clear()
        out = self.feed(wire.closing(upstream))
        if self.options.hold_text and self._held:  # broken off: the words so far go out, closed
            self._close_held(out)
        return out

    def _continue(self) -> None:
        self.view.add_usage(self._withheld)
        self.view.new_round()
        self._withheld = None

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        """The client stream ends with ``text`` as a final message."""
        view = self.view
        base = self._withheld or self.response or response_object({"model": model or self._model}, [], "in_progress")
        out: list[bytes] = []
        if not view.started:  # nothing reached the client yet: open the stream first
            out += [view.write({"type": kind, "response": base}) for kind in _OPENING]
        events, _ = wire.text_message_events(text, view.items, view.seq)
        out += [view.write(event) for event in events]
        closing = {
            **base,
            "status": "completed",
            "output": view.shown,
            "error": None,
            "incomplete_details": None,
            **view.identity(base),
        }
        closing["usage"] = view.summed(closing.get("usage"))
        out.append(view.write({"type": "response.completed", "response": closing}))
        self._report_withheld()
        return out

    failure_event = "response.failed"

    def _failed(self, failure: Any) -> list[bytes]:
        """``response.failed`` with the error, numbered after what the client got, and nothing
        after it. A stopped loop carries ``invalid_prompt``: Codex shows that error once and
        stops, where it retries other codes (five times) and takes a trailing
        ``response.completed`` for a finished task."""
        view = self.view
        base = self._withheld or self.response or response_object({"model": self._model}, [], "in_progress")
        out: list[bytes] = []
        if not view.started:
            out += [view.write({"type": kind, "response": base}) for kind in _OPENING]
        error = {"code": "invalid_prompt" if failure.final else failure.code, "message": failure.message}
        failed = {
            **base,
            "status": "failed",
            "output": view.shown,
            "error": error,
            "incomplete_details": None,
            **view.identity(base),
        }
        out.append(view.write({"type": "response.failed", "response": failed}))
        return out

    def _complete(self) -> bool:
        return self.round.finish_reason is not None

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        """A withheld closing event nobody decided on, then the upstream's ``[DONE]`` (some
        compatible servers send one)."""
        if undecided and self._withheld is not None:
            self.view.altered = True  # its output lists only what the client was shown
            out.append(self._close_for_client(self._withheld_event, b""))
        if self._saw_done:
            out.append(b"data: [DONE]\n\n")

    def _plain(self, data: bytes) -> bool:
        return (
            not self._held
            and not self.view.altered
            and not self._continuation
            and self._fast_paths
            and data.endswith(b"\n\n")
            and self._decoder.idle
            and _WATCHED.search(data) is None
        )

    # --- state for the pipeline -----------------------------------------------------------------

    @property
    def reply(self) -> dict[str, Any] | None:
        """The closing response the client got (``Adapter.remember`` stores it)."""
        return self.view.reply

    # --- events ---------------------------------------------------------------------------------

    def _start_round(self) -> None:
        self._open: dict[int, _Call] = {}  # calls not judged yet, by upstream output_index
        self._calls: dict[int, _Call] = {}  # every call of the round, by upstream output_index
        self._withheld_event: dict[str, Any] = {}
        self._judged = False  # the round ended and its calls are judged: held words may go (or not)
        if self._on_round is not None:
            self._on_round()

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
            self._held.append(_Event(None, event.raw))
            return
        kind = obj.get("type")
        kind = kind if isinstance(kind, str) else None  # no lookup key: read as an unknown event
        index = obj.get("output_index")
        call = self._calls.get(index) if type(index) is int else None
        if self.round.finish_reason is not None:
            # After the closing event nothing belongs to the response: a call there, or one
            # added again, would be shown under no verdict (or another call's)
            self._invalid(out, "an event after its response was closed")
            return
        if kind == "response.output_item.added" and _is_call(obj.get("item")):
            if call is not None:
                self._invalid(out, "a second output item at one output index")
                return
            self._start_call(obj, event.raw, index)
        elif call is not None and not call.released:
            self._call_event(call, obj, event.raw, kind)
        elif call is not None:
            if call.kept:  # a straggler after the call went out: it follows the call
                self._held.append(_Event(obj, event.raw))
        elif kind in _CLOSING:
            self._close(obj, event.raw)
        elif type(index) is int and self.options.hold_text:
            self._held.hold(_Event(obj, event.raw, True))
        else:
            if kind in _OPENING and isinstance(obj.get("response"), dict):
                self.response = obj["response"]
                self.view.opened(self.response)
            self._held.append(_Event(obj, event.raw))

    def _start_call(self, obj: dict[str, Any], raw: bytes, index: Any) -> None:
        item = obj["item"]
        call = _Call(len(self._calls), dict(item), [(obj, raw)])
        if item.get("type") == "custom_tool_call" and isinstance(item.get("call_id"), str):
            self.custom_ids.add(item["call_id"])
            if self._on_custom is not None:
                self._on_custom({item["call_id"]})
        key = index if type(index) is int else -1 - len(self._calls)
        self._calls[key] = self._open[key] = call
        self._held.hold(call)

    def _call_event(self, call: _Call, obj: dict[str, Any], raw: bytes, kind: Any) -> None:
        call.events.append((obj, raw))
        if call.done:
            return  # an event after the call was judged: it follows the judgement
        delta = obj.get("delta")
        if isinstance(delta, str) and kind in (
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            call.parts.append(delta)
        elif kind == "response.output_item.done" and isinstance(obj.get("item"), dict):
            call.item = obj["item"]
            self._settle([call])

    def _close(self, obj: dict[str, Any], raw: bytes) -> None:
        self._settle(list(self._open.values()))
        self._judged = True
        response = obj.get("response")
        if isinstance(response, dict):
            self.response = self.closing = response
        state = self.round
        state.finish_reason = obj.get("type")
        if state.all_dropped:
            state.finish_withheld = True
            self._withheld, self._withheld_event = (response if isinstance(response, dict) else None), obj
            return
        self._held.append(_Event(obj, raw))

    # --- judging and releasing ------------------------------------------------------------------

    def _close_held(self, out: list[bytes]) -> None:
        self._settle(list(self._open.values()))
        self._judged = True
        self._release(out)

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
        queue, view = self._held, self.view
        while queue:
            head = queue[0]
            if isinstance(head, _Call):
                if not head.done:
                    return
                queue.popleft()
                head.released = True
                if head.kept:
                    out.extend(view.relay(obj, raw) for obj, raw in head.events)
                else:
                    view.altered = True
                continue
            if head.text:  # held words: out once the round is judged, unless it was all refused
                if not self._judged:
                    return
                queue.popleft()
                if self.round.all_dropped:
                    view.altered = True
                else:
                    out.append(view.relay(head.obj, head.raw))
                continue
            queue.popleft()
            kind = head.obj.get("type") if head.obj is not None else None
            if head.obj is None:
                out.append(head.raw)
            elif kind in _CLOSING:
                out.append(self._close_for_client(head.obj, head.raw))
            elif self._continuation and kind in _OPENING:
                view.altered = True  # the re-ask continues the client's response: no second start
            else:
                out.append(view.relay(head.obj, head.raw))

    def _close_for_client(self, obj: dict[str, Any], raw: bytes) -> bytes:
        closed = self.view.close(obj, raw, {c.id for c in self.round.dropped if c.id})
        self._report_withheld()
        return closed

    def _report_withheld(self) -> None:
        """The client got a closing response: a later request may continue it by id, and the
        upstream then still expects outputs for the calls of this round it never saw."""
        reply, dropped = self.view.reply, self.round.dropped
        if reply is not None and dropped and self._on_withheld is not None and isinstance(reply.get("id"), str):
            self._on_withheld(reply["id"], list(dropped))


def _is_call(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in CALL_TYPES
