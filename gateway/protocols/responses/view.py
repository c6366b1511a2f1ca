"""The client's side of one relayed Responses stream: what it was shown and how it is numbered.

The client must see ``sequence_number`` 0, 1, 2 ... and ``output_index`` 0, 1, 2 ... without
gaps, and one response from its first event to its last (the openai SDK's stream helper checks
the id), whatever the gateway left out (dropped calls, a re-ask's opening events) or wrote
itself (the terminate message). An event whose numbers already match goes out as its own bytes,
so a stream the gateway does not change reaches the client unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.protocols.responses import events as wire
from gateway.protocols.usage import add_usage


class ClientView:
    def __init__(self, on_alias: Callable[[str, str], None] | None = None) -> None:
        self.seq = 0  # the client's next sequence_number
        self.items = 0  # the client's next output_index
        self.shown: list[Any] = []  # finished items the client was shown, in its order
        self.earlier: list[Any] = []  # of them, those shown before the current round
        self.usage: dict[str, Any] | None = None  # usage of dropped rounds, added to the next
        self.client_id: str | None = None  # the response id the client's stream started with
        self.started = False  # something reached the client
        self.altered = False  # something was left out or written: closings are rebuilt
        self.reply: dict[str, Any] | None = None  # the closing response the client got
        self._index: dict[int, int] = {}  # this round's upstream output_index -> the client's
        self._on_alias = on_alias  # (the client's response id, the upstream's for what it got)

    def new_round(self) -> None:
        """A re-ask's stream continues this one: its items follow those already shown."""
        self._index = {}
        self.earlier = list(self.shown)

    def opened(self, response: dict[str, Any]) -> None:
        if self.client_id is None and isinstance(response.get("id"), str):
            self.client_id = response["id"]

    def relay(self, obj: dict[str, Any], raw: bytes) -> bytes:
        """An upstream event (not a closing one) in the client's numbering."""
        self.started = True
        changed = False
        index = obj.get("output_index")
        if type(index) is int:
            mine = self._index.get(index)
            if mine is None:
                mine = self._index[index] = self.items
                self.items += 1
            if mine != index:
                obj, changed = {**obj, "output_index": mine}, True
        obj, renumbered = self._numbered(obj)
        if obj.get("type") == "response.output_item.done":
            self.shown.append(obj.get("item"))
        return wire.encode(obj) if changed or renumbered else raw

    def close(self, obj: dict[str, Any], raw: bytes, dropped: set[str]) -> bytes:
        """The upstream's closing event; once the stream was changed, its response lists what
        the client was shown (``dropped``: call ids of this round left out)."""
        response = obj.get("response")
        if (self.altered or self.usage is not None) and isinstance(response, dict):
            response = {**response, "output": self._output(response, dropped), **self.identity(response)}
            response["usage"] = self.summed(response.get("usage"))
            obj, raw = {**obj, "response": response}, b""
        obj, renumbered = self._numbered(obj)
        if isinstance(obj.get("response"), dict):
            self.reply = obj["response"]
        return raw if raw and not renumbered else wire.encode(obj)

    def write(self, obj: dict[str, Any]) -> bytes:
        """An event the gateway writes itself, numbered next."""
        self.started = self.altered = True
        obj["sequence_number"] = self.seq
        self.seq += 1
        if obj.get("type") == "response.output_item.done":
            self.items += 1
            self.shown.append(obj["item"])
        if obj.get("type") == "response.completed":
            self.reply = obj["response"]
        return wire.encode(obj)

    def identity(self, response: dict[str, Any]) -> dict[str, Any]:
        """A re-ask's closing response wears the first id; the upstream's id is reported."""
        upstream = response.get("id")
        if self.client_id is None or upstream == self.client_id:
            return {}
        if isinstance(upstream, str) and self._on_alias is not None:
            self._on_alias(self.client_id, upstream)
        return {"id": self.client_id}

    def add_usage(self, response: dict[str, Any] | None) -> None:
        usage = response.get("usage") if isinstance(response, dict) else None
        if isinstance(usage, dict):
            self.usage = add_usage(self.usage, usage)

    def summed(self, usage: Any) -> Any:
        if self.usage is None:
            return usage
        return add_usage(self.usage, usage) if isinstance(usage, dict) else self.usage

    def _output(self, response: dict[str, Any], dropped: set[str]) -> list[Any]:
        output = response.get("output")
        if not isinstance(output, list):
            return [*self.earlier, *self.shown[len(self.earlier) :]]
        mine = [
            item
            for item in output
            if not (
                isinstance(item, dict)
                and item.get("call_id") in dropped
                and item.get("type") in ("function_call", "custom_tool_call")
            )
        ]
        return [*self.earlier, *mine]

    def _numbered(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        seq = obj.get("sequence_number")
        if seq is None:
            return obj, False
        mine, self.seq = self.seq, self.seq + 1
        return (obj, False) if seq == mine and type(seq) is int else ({**obj, "sequence_number": mine}, True)
