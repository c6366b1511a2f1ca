"""The OpenAI Responses API (``POST /v1/responses``) as a protocol adapter."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from gateway.errors import error_body
from gateway.protocols.responses import chain, events, parse, replies, rewrite
from gateway.protocols.responses.stream import ResponsesStreamFilter
from gateway.state.base import ChainRecord
from gateway.trace.model import Conversation, ToolCall


class RecentIds:
    """Call ids of recent custom tool calls (bounded). A refused call is re-shown to the model
    as the kind of item it was, and a ToolCall does not say which kind that is."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, ids: set[str]) -> None:
        for call_id in ids:
            self._ids[call_id] = None
            self._ids.move_to_end(call_id)
        while len(self._ids) > self.limit:
            self._ids.popitem(last=False)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._ids


class ResponsesAdapter:
    name = "responses"

    def __init__(self) -> None:
        self.custom_calls = RecentIds()

    # --- the request --------------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        return parse.input_items(payload)

    def conversation(self, payload: dict[str, Any], items: list[Any]) -> Conversation:
        return parse.conversation_from_items(items, parse.declared_tools(payload))

    def chained_conversation(self, payload: dict[str, Any], record: ChainRecord | None,
                             items: list[Any]) -> Conversation:
        """``items`` after the chain's earlier items, which are numbered below 0 so every
        ``Turn.index`` of the request's own items stays its position in ``items``."""
        earlier = list(record.items) if record is not None else []
        return parse.conversation_from_items([*earlier, *items], parse.declared_tools(payload), -len(earlier))

    def with_items(self, payload: dict[str, Any], items: list[Any]) -> dict[str, Any]:
        return rewrite.with_items(payload, items)

    def stream(self, payload: dict[str, Any]) -> bool:
        return payload.get("stream") is True

    def model(self, payload: dict[str, Any]) -> str:
        model = payload.get("model")
        return model if isinstance(model, str) else ""

    def previous_id(self, payload: dict[str, Any]) -> str | None:
        return chain.previous_id(payload)

    # --- interventions on the request ----------------------------------------------------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        return rewrite.add_anchor(items, text, placement)

    def replace_result(self, items: list[Any], index: int, text: str) -> list[Any]:
        return rewrite.replace_result(items, index, text)

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        return rewrite.veto_exchange(call, observation, call.id in self.custom_calls)

    # --- the reply ----------------------------------------------------------------------------

    def proposed_calls(self, reply: dict[str, Any]) -> tuple[ToolCall, ...]:
        self.custom_calls.add(replies.custom_call_ids(reply))
        return replies.proposed_calls(reply)

    def keep_calls(self, reply: dict[str, Any], count: int) -> dict[str, Any]:
        return replies.keep_calls(reply, count)

    def reply_text(self, reply: dict[str, Any]) -> str:
        return replies.reply_text(reply)

    def stream_filter(self, judge) -> ResponsesStreamFilter:
        return ResponsesStreamFilter(judge, on_custom=self.custom_calls.add)

    # --- replies the gateway writes ------------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        return replies.termination_reply(text, payload)

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        return events.termination_events(text, payload)

    def error_body(self, message: str, type: str, code: str | None = None) -> dict[str, Any]:
        return error_body(message, type, None, code)

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        return rewrite.without_tools(payload)
