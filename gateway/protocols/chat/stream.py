"""Relay a chat-completions SSE stream while holding each tool call until it has been judged.

Content goes to the client as soon as it arrives. An event carrying choice 0's tool-call deltas is
held until every call it touches is complete and judged (a call is complete when a later call
starts, when finish_reason arrives, or when the stream ends), then released: as its original
bytes when all its calls were kept under their own index (so an unvetoed stream is relayed byte
for byte), or rebuilt without the dropped calls and with ``index`` renumbered from 0. The first
rejected call drops itself and every later call of the round. When every call was
dropped the finish chunk is withheld and the pipeline decides: re-ask the model and relay its
answer as a continuation of the same client stream, or end the stream with a terminate text.

A role-only delta travels with the tool-call event it came in (that is what keeps OpenAI's first
tool chunk byte-identical); any content for choice 0 makes it go out first. One answer is what
this filter relays (several, ``n > 1``, go through ``choices.ChoicesFilter``): a chunk with a
second choice, or one at another index, ends the stream with an error chunk (agents read
``choices[0]`` whatever its index).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.chat.assembler import PartialCall, ToolCallAssembler
from gateway.protocols.chat.chunks import Envelope, content_chunk, finish_chunk, usage_chunk
from gateway.protocols.sse import DONE, SSEEvent, data_event
from gateway.protocols.streaming import StreamDriver
from gateway.protocols.usage import add_usage
from gateway.wire import codec

__all__ = ["ToolCallFilter"]

_TOOL_FIELDS = ("tool_calls", "function_call")


@dataclass(slots=True)
class _Held:
    """A choice-0 event waiting for the judgement of the calls it carries."""

    raw: bytes
    chunk: dict[str, Any]  # as parsed: its ``_head`` when the event is rebuilt
    choice: dict[str, Any]
    entries: list[tuple[dict[str, Any], PartialCall]]  # tool_calls entry (or function_call), its call
    rest: dict[str, Any]  # delta fields that have not gone out yet (a role)
    usage: Any
    raw_ok: bool  # nothing was taken out of the event or changed in it
    text: list[bytes] | None = None  # held words (``hold_text``): the bytes they go out as


class ToolCallFilter(StreamDriver):
    """Feed upstream bytes in, write the returned bytes to the client, in order.

    This reads every event the one general way (decode, parse, hold or relay); ``chat/fast.py``
    is the same filter with the fast paths, which the adapter uses unless they are switched off.
    """

    def __init__(
        self, judge: Judge, envelope: Envelope | None = None, options: StreamOptions | None = None, model: str = ""
    ) -> None:
        self._model = model  # for a reply written before any upstream chunk gave an envelope
        self.envelope = envelope  # of the client stream: taken from the first upstream chunk
        self._next_index = 0  # client-side tool-call index, continues across continuations
        self._held_usage: dict[str, Any] | None = None
        self._emitted = self._done_sent = False
        super().__init__(judge, options)

    @property
    def reply(self) -> dict[str, Any] | None:
        """What the stream tells of the completion as a whole: its id (the client stream's, the
        first upstream chunk's), by which a stored completion (``store: true``) is claimed."""
        return {"id": self.envelope.id} if self.envelope is not None else None

    # --- the driver's hooks ---------------------------------------------------------------
    # ``cut``: chunks open nothing a client must see closed: ``terminate`` writes the finish.

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        """The client stream ends with ``text`` and finish_reason "stop"."""
        env = self.envelope or Envelope.new(self._model if model is None else model)
        chunks = [content_chunk(env, text, role=not self._emitted), finish_chunk(env, "stop")]
        return [data_event(chunk) for chunk in chunks]

    failure_event = "error_chunk"

    def _failed(self, failure: Any) -> list[bytes]:
        return failed_events(failure)

    def _complete(self) -> bool:
        return self._saw_done

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        """A finish nobody decided on, held usage, then ``[DONE]`` once (if the upstream sent it)."""
        env = self.envelope or Envelope.new("")
        if undecided:  # never leave the client without a finish
            out.append(data_event(finish_chunk(env, "stop")))
        if self._held_usage is not None:
            out.append(data_event(usage_chunk(env, self._held_usage)))
            self._held_usage = None
        if (self._saw_done or self._terminated) and not self._done_sent:
            out.append(DONE)

    # --- events ---------------------------------------------------------------------------

    def _start_round(self) -> None:
        self._asm = ToolCallAssembler()
        self._judged = False  # the round's calls are all judged: its held words may go (or not)

    def _on_done(self, out: list[bytes]) -> None:
        """``[DONE]`` is withheld while anything may still follow it: a re-ask's continuation or
        a final text (a call of this round was dropped), a call still open or held, usage held
        back. Otherwise every call was judged and kept: it goes out with the rest of the read
        (one write to the client fewer)."""
        self._saw_done = True
        state = self.round
        if self._held or self._asm.open or state.dropped or state.finish_withheld or self._held_usage is not None:
            return
        self._done_sent = True
        out.append(DONE)

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        data, raw = event.data, event.raw
        if data is None:
            out.append(raw)
            return
        if data == "[DONE]":
            self._on_done(out)
            return
        try:
            chunk = codec.loads(data)
        except codec.DecodeError:
            chunk = None
        self._on_data(chunk, raw, out)

    def _on_data(self, chunk: Any, raw: bytes, out: list[bytes]) -> None:
        """An event's data, parsed: a chunk to read, or anything else to relay as it is. Read by
        its data alone, as the openai SDK reads it: an ``event: error`` name, or an ``error``
        key that is empty, does not stop the SDK yielding the chunk's choices."""
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            self._relay(raw, out)
            return
        self._on_chunk(chunk, raw, out)

    def _on_chunk(self, chunk: dict[str, Any], raw: bytes, out: list[bytes]) -> None:
        choices = chunk["choices"]
        if len(choices) > 1 or (choices and (not isinstance(choices[0], dict) or choices[0].get("index", 0) != 0)):
            # One answer was asked for (``n`` 1): a client reads ``choices[0]`` whatever its
            # index, or merges every choice of index 0 into one; a second choice, or one at
            # another index, would pass unjudged.
            self._invalid(out, "a choice the request did not ask for")
            return
        if self.envelope is None:
            self.envelope = Envelope.from_chunk(chunk)
        if self._continuation:  # one completion for the client: the re-ask wears the first id
            chunk["id"], chunk["created"] = self.envelope.id, self.envelope.created
        choice = choices[0] if choices else None
        delta = choice.get("delta") if choice is not None else None
        delta = delta if isinstance(delta, dict) else {}
        # Some servers send "tool_calls": [] with every content delta: that is no tool call.
        has_tools = bool(delta.get("tool_calls")) or delta.get("function_call") is not None
        if choice is not None and (has_tools or (choice.get("finish_reason") and self._asm.calls)):
            self._hold(chunk, raw, choice, delta, out)
        elif self.options.hold_text and choice is not None and not choice.get("finish_reason"):
            self._hold_words(chunk, lambda now: self._plain(chunk, raw, choice, delta, now))
        else:
            if self.options.hold_text and choice is not None:  # a round without calls ends
                self._judged = True
                self._release(out)
            self._plain(chunk, raw, choice, delta, out)

    def _hold_words(self, chunk: dict[str, Any], write: Any) -> None:
        """Words of a round in a conversation at warn level or above: held, in order with its
        calls, until they are judged, so a refused round's words never reach the client."""
        now: list[bytes] = []
        emitted = self._emitted
        write(now)
        self._emitted = emitted  # nothing reached the client yet
        if now:
            self._held.hold(_Held(b"", chunk, {}, [], {}, None, False, now))

    def _plain(
        self, chunk: dict[str, Any], raw: bytes, choice: dict[str, Any] | None, delta: dict[str, Any], out: list[bytes]
    ) -> None:
        """An event without tool calls: relayed as it is unless a re-ask or held usage changes it."""
        if choice is not None:
            self._flush_role(out)
        strip = self._role_sent() and "role" in delta
        usage, usage_changed = self._usage(chunk.get("usage"))
        if not (self._continuation or usage_changed):
            self._relay(raw, out)
            return
        choices = chunk["choices"]
        if strip:
            choice = cast(dict[str, Any], choice)  # a role is stripped from a choice's delta
            rest = {k: v for k, v in delta.items() if k != "role"}
            keep = _meaningful(rest, choice) or choice.get("finish_reason") is not None
            choices = [c for c in choices if c is not choice or keep]
            choices = [{**c, "delta": rest} if c is choice else c for c in choices]
        if choices or usage is not None or not (chunk["choices"] or usage_changed):
            self._emit_piece({**chunk, "choices": choices, **_usage_field(chunk, usage)}, out)

    def _hold(
        self, chunk: dict[str, Any], raw: bytes, choice: dict[str, Any], delta: dict[str, Any], out: list[bytes]
    ) -> _Held:
        # Most tool-call deltas carry nothing else: no copy of the delta for them.
        rest = (
            {}
            if len(delta) == 1 and "tool_calls" in delta
            else {k: v for k, v in delta.items() if k not in _TOOL_FIELDS}
        )
        if self._role_sent():
            rest.pop("role", None)
        usage = chunk.get("usage")
        raw_ok = not self._continuation and usage is None
        if len(chunk["choices"]) > 1 or _meaningful(rest, choice):  # content goes out now; the tool part waits

            def write(now: list[bytes], rest: dict[str, Any] = rest) -> None:
                self._flush_role(now)
                piece = {**choice, "delta": rest, "finish_reason": None} if rest or choice.get("logprobs") else None
                choices = [piece if c is choice else c for c in chunk["choices"]]
                self._emit_piece({**_head(chunk), "choices": [c for c in choices if c is not None]}, now)

            if self.options.hold_text:
                self._hold_words(chunk, write)
            else:
                write(out)
            rest, raw_ok = {}, False
        held = _Held(raw, chunk, choice, [], rest, usage, raw_ok)
        completed = self._add_entries(held, delta)
        if choice.get("finish_reason"):
            self.round.finish_reason = choice["finish_reason"]
            completed += self._asm.close()
            self._judged = True
        self._held.hold(held)
        self._settle(completed)
        self._release(out)
        return held

    def _add_entries(self, held: _Held, delta: dict[str, Any]) -> list[PartialCall]:
        completed: list[PartialCall] = []
        tools, legacy = delta.get("tool_calls"), delta.get("function_call")
        for entry in tools if isinstance(tools, list) else ():
            if isinstance(entry, dict):
                call, done = self._asm.add_entry(entry)
                held.entries.append((entry, call))
                completed += done
                self.round.interleaved |= call.late
        if isinstance(legacy, dict):
            call, done = self._asm.add_legacy(legacy)
            held.entries.append((legacy, call))
            completed += done
        return completed

    # --- judging and releasing ----------------------------------------------------------------

    def _close_held(self, out: list[bytes]) -> None:
        self._settle(self._asm.close())
        self._judged = True
        self._release(out)

    def _settle(self, completed: list[PartialCall]) -> None:
        self._next_index = self.round.settle(completed, self._judge, self._next_index)

    def _release(self, out: list[bytes]) -> None:
        """Send held events, in order, as soon as every call they touch is judged."""
        held, state = self._held, self.round
        index = state.out_index
        while held:
            first = held[0]
            entries = first.entries
            if first.text is not None:  # held words: out once the round is judged, unless refused
                if not self._judged:
                    return
                held.popleft()
                if not state.all_dropped:
                    self._emitted = True
                    out.extend(first.text)
                continue
            if len(entries) == 1:  # the usual event: one call's delta
                entry, call = entries[0]
                if not call.done:
                    return
                as_it_came = (
                    first.raw_ok
                    and first.usage is None
                    and not state.dropped
                    and (call.legacy or entry.get("index") == index.get(call.position, -1))
                )
            elif all(call.done for _, call in entries):
                as_it_came = False
            else:
                return
            held.popleft()
            if as_it_came:  # its call kept under its own index: the event as it came
                self._emitted = True
                out.append(first.raw)
            else:
                self._release_one(first, out)

    def _release_one(self, held: _Held, out: list[bytes]) -> None:
        finish = held.choice.get("finish_reason")
        if finish and self.round.all_dropped:
            self.round.finish_withheld = True
            finish = None
        index = self.round.out_index
        if (
            held.raw_ok
            and held.usage is None
            and not self.round.dropped
            and all(call.legacy or entry.get("index") == index.get(call.position, -1) for entry, call in held.entries)
        ):
            self._relay(held.raw, out)  # every call kept under its own index: the event as it came
            return
        usage, usage_changed = self._usage(held.usage)
        kept = [(entry, call) for entry, call in held.entries if call.position in index]
        same = all(call.legacy or entry.get("index") == index[call.position] for entry, call in kept)
        untouched = held.raw_ok and not usage_changed and finish == held.choice.get("finish_reason")
        if untouched and same and len(kept) == len(held.entries):
            self._relay(held.raw, out)
            return
        delta = dict(held.rest)
        entries = [{**entry, "index": index[call.position]} for entry, call in kept if not call.legacy]
        if entries:
            delta["tool_calls"] = entries
        for entry, call in kept:
            if call.legacy:
                delta["function_call"] = entry
        choices = [{**held.choice, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if delta or finish:
            head = _head(held.chunk)
            self._emit_piece({**head, "choices": choices, **_usage_field(head, usage)}, out)
        elif usage is not None:
            self._emit_piece({**_head(held.chunk), "choices": [], "usage": usage}, out)

    def _flush_role(self, out: list[bytes]) -> None:
        """A held role must reach the client before any other delta of choice 0."""
        for held in self._held:
            if held.rest:
                choice = {"index": 0, "delta": held.rest, "logprobs": None, "finish_reason": None}
                self._emit_piece({**_head(held.chunk), "choices": [choice]}, out)
                held.rest, held.raw_ok = {}, False

    def _role_sent(self) -> bool:
        """A continuation's role is the first round's; held words of a refused round took the
        role with them, and then the continuation's goes out."""
        return self._continuation and (self._emitted or not self.options.hold_text)

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

    # --- output ---------------------------------------------------------------------------

    def _relay(self, raw: bytes, out: list[bytes]) -> None:
        self._emitted = True
        out.append(raw)

    def _emit_piece(self, piece: dict[str, Any], out: list[bytes]) -> None:
        self._emitted = True
        out.append(data_event(piece))


def _head(chunk: dict[str, Any]) -> dict[str, Any]:
    """A chunk without its choices, usage reset: what a rebuilt piece of it starts from."""
    head = {k: v for k, v in chunk.items() if k != "choices"}
    if "usage" in head:
        head["usage"] = None
    return head


def _meaningful(rest: dict[str, Any], choice: dict[str, Any]) -> bool:
    """Whether a delta has more than a role (content, refusal, ...) or the choice has logprobs."""
    fields = any(v is not None and v != "" for k, v in rest.items() if k != "role")
    return fields or choice.get("logprobs") is not None


def _usage_field(chunk: dict[str, Any], usage: Any) -> dict[str, Any]:
    return {"usage": usage} if usage is not None or "usage" in chunk else {}


def failed_events(failure: Any) -> list[bytes]:
    """A chat stream's error ending: an ``error`` chunk (the SDKs raise it) and ``[DONE]``."""
    error = {
        "message": failure.message,
        "type": "upstream_error" if not failure.final else "invalid_request_error",
        "param": None,
        "code": failure.code,
    }
    return [data_event({"error": error}), DONE]
