"""A whole round of tool calls in one read: the rest of a stream, up to its ``[DONE]``.

A fast upstream, a buffering proxy or a busy gateway delivers a stream's tool calls, their
finish and ``[DONE]`` in a single read. Event by event, the filter would hold each tool-call
event, then release every one as it came; when all the calls are kept under their own index,
the client gets exactly the bytes that came. ``scan`` reads such a read in one pass for only
what the judge needs (the assembled calls, in the order they complete) and says whether it has
the plain shape for which that holds. The filter then judges the calls; kept, the read goes out
as it came; otherwise the same read goes through the event-by-event path with the verdicts
already given (``Verdicts``), which writes the edited stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.protocols.chat.arguments import around, is_argument_entry, text_between
from gateway.protocols.chat.assembler import PartialCall, ToolCallAssembler
from gateway.protocols.chat.chunks import Envelope
from gateway.trace.model import ToolCall

__all__ = ["Round", "Verdicts", "scan"]

_TOOL_FIELDS = ("tool_calls", "function_call")


@dataclass(slots=True)
class Round:
    assembler: ToolCallAssembler
    completed: list[PartialCall]  # every call, in the order the event-by-event path completes them
    entries: list[tuple[dict[str, Any], PartialCall]]  # each tool_calls entry and its call
    finish_reason: str
    envelope: Envelope


def scan(parts: list[bytes], envelope: Envelope | None) -> Round | None:
    """``parts``: a read's whole events without their blank lines, the last one ``[DONE]``,
    read by a filter at the start of a round (nothing held, no call yet). None unless every
    event before the first call goes out as it came, then come only events of one choice that
    carry tool-call deltas and nothing else, then the finish (no usage, no logprobs, no legacy
    ``function_call``)."""
    asm = ToolCallAssembler()
    completed: list[PartialCall] = []
    entries: list[tuple[dict[str, Any], PartialCall]] = []
    finish: str | None = None
    known: tuple[bytes, bytes, PartialCall, int] | None = None  # an argument event's bytes around its text
    for part in parts[:-1]:
        if not asm.calls and envelope is not None and b"_call" not in part:
            continue  # before the calls: relayed as it came
        if known is not None and not known[2].done:
            text = text_between(part, known[0], known[1])
            if text is not None:  # the same argument event with other text
                if text:
                    known[2].parts.append(text)
                entries.append(({"index": known[3]}, known[2]))
                continue
        if not part.startswith(b"data: {") or b"\n" in part or finish is not None:
            return None
        try:
            chunk = orjson.loads(part[6:])
        except orjson.JSONDecodeError:
            return None
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if not isinstance(choices, list):
            if asm.calls:
                return None
            continue  # no chunk: relayed as it came
        if envelope is None:
            envelope = Envelope.from_chunk(chunk)
        choice = choices[0] if len(choices) == 1 else None
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            if choices or asm.calls:  # another choice than the one asked for: the reader decides
                return None
            continue
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        tools, reason = delta.get("tool_calls"), choice.get("finish_reason")
        if not tools and not (reason and asm.calls):
            if asm.calls:
                return None  # text between or after the calls: the events are rebuilt around it
            continue  # text before the calls: relayed as it came
        if (
            not isinstance(tools, list | type(None))
            or delta.get("function_call") is not None
            or chunk.get("usage") is not None
            or choice.get("logprobs") is not None
            or any(v is not None and v != "" for k, v in delta.items() if k not in _TOOL_FIELDS and k != "role")
        ):
            return None
        for entry in tools or ():
            if isinstance(entry, dict):
                call, done = asm.add_entry(entry)
                completed += done
                entries.append((entry, call))
        if reason:
            finish = reason
            completed += asm.close()
        elif (
            isinstance(tools, list)
            and len(tools) == 1
            and len(delta) == 1
            and is_argument_entry(tools[0])
            and not call.done
        ):
            found = around(part, len(part), tools[0]["function"]["arguments"])
            known = None if found is None else (found[0], found[1], call, tools[0]["index"])
    if finish is None or envelope is None or any(call.late for call in asm.calls):
        # No call, calls still open at the end, or a call's deltas after a later call began
        # (judged on what it had by then): the event-by-event path.
        return None
    return Round(asm, completed, entries, finish, envelope)


class Verdicts:
    """A judge that answers with the verdicts already given, in the order they were asked for,
    so the event-by-event path judges each call once; past them it asks ``judge``."""

    def __init__(self, given: list[bool | Exception], judge: Callable[..., bool]) -> None:
        self._given, self._judge, self._next = given, judge, 0

    @classmethod
    def recording(cls, judge: Callable[..., bool]) -> tuple[list[bool | Exception], Callable[[ToolCall, int], bool]]:
        given: list[bool | Exception] = []

        def record(call: ToolCall, position: int) -> bool:
            try:
                keep = bool(judge(call, position))
            except Exception as exc:
                given.append(exc)
                raise
            given.append(keep)
            return keep

        return given, record

    def __call__(self, call: ToolCall, position: int) -> bool:
        if self._next >= len(self._given):
            return self._judge(call, position)
        verdict = self._given[self._next]
        self._next += 1
        if isinstance(verdict, Exception):
            raise verdict
        return verdict
