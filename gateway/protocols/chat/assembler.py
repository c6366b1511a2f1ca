"""Merge streamed tool-call deltas of one choice into complete calls.

Upstreams disagree on the shape of tool-call deltas, and gateways break on these shapes:
``id``/``name`` only in the first delta or a whole call in one delta, parallel calls, arguments
split anywhere, ``index`` missing, ids repeated or absent, legacy ``function_call``. Calls are
assumed to stream one after another (every known provider does), so a call is complete when a
later call starts, when ``finish_reason`` arrives, or when the stream ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

from gateway.trace.model import ToolCall
from gateway.wire import codec

__all__ = ["PartialCall", "ToolCallAssembler"]


@dataclass(slots=True)
class PartialCall:
    position: int  # order of appearance in the choice, from 0
    key: int | None = None  # the upstream's `index`
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    legacy: bool = False  # a `function_call`, not a `tool_calls` entry
    done: bool = False
    late: bool = False  # a delta arrived after the call was complete (interleaved calls)

    @property
    def arguments(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def to_call(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments=self.arguments)

    def merge(self, delta: dict[str, Any]) -> None:
        ident = delta.get("id")
        if isinstance(ident, str) and ident and not self.id:
            self.id = ident
        fn = delta.get("function")
        if isinstance(fn, dict):
            self._merge_function(fn)

    def _merge_function(self, fn: dict[str, Any]) -> None:
        name = fn.get("name")
        # Some upstreams repeat the whole name in every delta; fragments are concatenated.
        if isinstance(name, str) and name and name != self.name:
            self.name += name
        args = fn.get("arguments")
        if isinstance(args, str):
            if args:
                self.parts.append(args)
        elif args is not None:  # an object instead of JSON text: seen from some local servers
            self.parts.append(codec.dumps(args).decode())  # lone surrogates escaped, not refused


class ToolCallAssembler:
    """One choice's tool calls; the ``add*`` methods and ``close`` return the calls they complete."""

    def __init__(self) -> None:
        self.calls: list[PartialCall] = []
        self._by_key: dict[int, PartialCall] = {}
        self._by_id: dict[str, PartialCall] = {}

    def add(self, deltas: Any) -> list[PartialCall]:
        """A delta's ``tool_calls`` list."""
        completed: list[PartialCall] = []
        for delta in deltas if isinstance(deltas, list) else (deltas,):
            if isinstance(delta, dict):
                completed += self.add_entry(delta)[1]
        return completed

    def add_entry(self, delta: dict[str, Any]) -> tuple[PartialCall, list[PartialCall]]:
        """One ``tool_calls`` entry: the call it belongs to, and the calls it completes."""
        calls = self.calls
        if calls and len(delta) == 2:
            # Most entries add argument text to the open call: {"index": k, "function":
            # {"arguments": "..."}}. Read here what the general path below would make of it.
            call, fn, key = calls[-1], delta.get("function"), delta.get("index")
            if (
                type(fn) is dict
                and len(fn) == 1
                and type(key) is int
                and call.key == key
                and not call.done
                and not call.legacy
                and type(args := fn.get("arguments")) is str
            ):
                if args:
                    call.parts.append(args)
                return call, []
        completed: list[PartialCall] = []
        found = self._resolve(delta)
        if found is None:
            completed = self._complete_open()
            key = delta.get("index")
            found = self._start(key if _is_index(key) else None)
        self._merge(found, delta)
        return found, completed

    def add_legacy(self, delta: dict[str, Any]) -> tuple[PartialCall, list[PartialCall]]:
        """A legacy ``function_call`` delta: one call per message."""
        if self.calls and self.calls[-1].legacy:
            call, completed = self.calls[-1], []
        else:
            completed = self._complete_open()
            call = self._start(None, legacy=True)
        self._merge(call, {"function": delta})
        return call, completed

    def close(self) -> list[PartialCall]:
        return self._complete_open()

    @property
    def open(self) -> bool:
        return bool(self.calls) and not self.calls[-1].done

    def _resolve(self, delta: dict[str, Any]) -> PartialCall | None:
        """The call this delta continues, or None when it starts a new one."""
        ident = delta.get("id")
        if isinstance(ident, str) and ident:
            known = self._by_id.get(ident)
            if known is not None:
                return known
        else:
            ident = None
        key = delta.get("index")
        if _is_index(key):
            call = self._by_key.get(key)
        else:  # no index: the latest call, unless a new id says otherwise
            call = self.calls[-1] if self.calls and not self.calls[-1].legacy else None
        if call is not None and ident is not None and call.id and call.id != ident:
            return None  # same index (or none) but a different id: parallel calls all at index 0
        return call

    def _start(self, key: int | None, legacy: bool = False) -> PartialCall:
        call = PartialCall(position=len(self.calls), key=key, legacy=legacy)
        self.calls.append(call)
        if key is not None:
            self._by_key[key] = call
        return call

    def _merge(self, call: PartialCall, delta: dict[str, Any]) -> None:
        call.late |= call.done
        call.merge(delta)
        if call.id:
            self._by_id.setdefault(call.id, call)

    def _complete_open(self) -> list[PartialCall]:
        completed = [call for call in self.calls if not call.done]
        for call in completed:
            call.done = True
        return completed


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
