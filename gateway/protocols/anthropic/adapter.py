"""The Anthropic Messages API as a protocol adapter (see ``gateway.protocols.base.Adapter``).

``items`` are the request's ``messages``. The system prompt lives outside them: it is read into
the conversation from the payload, and a warning placed there travels in the item list as a
``SystemNote`` until ``with_items`` moves it into ``system``.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.anthropic import parse, replies, rewrite
from gateway.protocols.anthropic.stream import ToolUseFilter
from gateway.protocols.base import Judge
from gateway.trace.model import Conversation, ToolCall


class AnthropicAdapter:
    name = "anthropic"

    # --- the request ----------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        messages = payload.get("messages") if isinstance(payload, dict) else None
        return messages if isinstance(messages, list) else []

    def conversation(self, payload: dict[str, Any], items: list[Any]) -> Conversation:
        return parse.conversation(payload, items)

    def with_items(self, payload: dict[str, Any], items: list[Any]) -> dict[str, Any]:
        return rewrite.with_messages(payload, items)

    def stream(self, payload: dict[str, Any]) -> bool:
        return payload.get("stream") is True

    def model(self, payload: dict[str, Any]) -> str:
        model = payload.get("model")
        return model if isinstance(model, str) else ""

    # --- interventions on the request -------------------------------------------------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        return rewrite.add_anchor(items, text, placement)

    def replace_result(self, items: list[Any], index: int, text: str, call_id: str | None = None) -> list[Any]:
        return rewrite.replace_result(items, index, text, call_id)

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        return rewrite.veto_exchange(call, observation)

    # --- the reply --------------------------------------------------------------------------

    def proposed_calls(self, reply: dict[str, Any]) -> tuple[ToolCall, ...]:
        return replies.proposed_calls(reply)

    def keep_calls(self, reply: dict[str, Any], count: int) -> dict[str, Any]:
        return replies.keep_calls(reply, count)

    def reply_text(self, reply: dict[str, Any]) -> str:
        return replies.reply_text(reply)

    def stream_filter(self, judge: Judge) -> ToolUseFilter:
        return ToolUseFilter(judge)

    # --- replies the gateway writes ---------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        return replies.termination_message(text, self.model(payload))

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        return replies.termination_stream(text, self.model(payload))

    def error_body(self, message: str, type: str, code: str | None = None,
                   status: int | None = None) -> dict[str, Any]:
        return replies.error_body(message, type, code, status)

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        return rewrite.without_tools(payload)
