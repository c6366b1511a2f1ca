"""OpenAI Chat Completions as a pipeline adapter (``gateway.protocols.base.Adapter``).

Items are the request's ``messages``; everything else is delegated to the chat modules: parse
(messages -> turns), rewrite (anchors, replaced results), replies (veto exchange, termination),
answers (a reply's calls and text), stream (the tool-call filter).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols import usage
from gateway.protocols.adapters import PayloadFields, WholeConversations
from gateway.protocols.base import Answer, ItemText, Judge, StreamOptions
from gateway.protocols.chat import answers, replies, rewrite, tokens
from gateway.protocols.chat.choices import ChoicesFilter
from gateway.protocols.chat.fast import FastToolCallFilter
from gateway.protocols.chat.parse import declared_tools, turn_from_message
from gateway.protocols.chat.stream import ToolCallFilter
from gateway.protocols.declaration import Declaration
from gateway.protocols.errors import error_body
from gateway.protocols.sse import data_event
from gateway.trace.model import Conversation, ToolCall

__all__ = ["CHAT", "ChatAdapter"]


class ChatAdapter(PayloadFields, WholeConversations):
    name = "chat"
    items_field = "messages"  # see Adapter.items_field
    reply_types = (dict,)  # see Adapter.reply_types
    payload_fields = ("tools", "functions")  # see Adapter.payload_fields
    declared = Declaration(
        family="openai.chat_completions",
        routes=("/v1/chat/completions", "/chat/completions"),
        id_fields=frozenset({"id", "tool_call_id"}),
        reads=lambda body: isinstance(body.get("messages"), list) and bool(body["messages"]),
        other_methods=("GET",),  # lists stored completions
        session_prefix=False,  # its session keys were stored bare before other protocols came
    )

    # --- the request ----------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        messages = payload.get("messages")
        return messages if isinstance(messages, list) else []

    def conversation(self, payload: dict[str, Any], items: list[Any], start: int = 0) -> Conversation:
        turns = tuple(t for i in range(start, len(items)) if (t := turn_from_message(items[i], i)) is not None)
        return Conversation(turns, declared_tools(payload))

    def with_items(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        return {**payload, "messages": items}

    # --- interventions on the request ------------------------------------------------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        return rewrite.add_anchor(items, text, placement)

    def result_index(self, items: list[Any], call_id: str, after: int) -> int | None:
        for index in range(max(after, 0) + 1, len(items)):
            message = items[index]
            if isinstance(message, dict) and message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return index
        return None

    def replace_result(self, items: list[Any], index: int, text: str, call_id: str) -> list[Any]:
        return rewrite.replace_content(items, index, text)  # a tool message answers one call

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        return [replies.assistant_message_for([call]), replies.veto_observation(call, observation)]

    def corrective(self, answer: str, text: str) -> list[Any]:
        return [{"role": "assistant", "content": answer}, {"role": "user", "content": text}]

    # --- the reply --------------------------------------------------------------------------

    def proposed_calls(self, reply: dict[str, Any]) -> list[tuple[ToolCall, ...]]:
        return answers.proposed_calls(reply)

    def keep_calls(self, reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
        return answers.keep_calls(reply, keep)

    def answer(self, reply: dict[str, Any]) -> Answer | None:
        return answers.answer(reply)

    def prepend_text(self, reply: dict[str, Any], text: str) -> dict[str, Any]:
        return answers.prepend_text(reply, text)

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> ToolCallFilter | ChoicesFilter:
        n = payload.get("n")
        if type(n) is int and n > 1:  # several answers, interleaved: each one judged
            return ChoicesFilter(judge, model=self.model(payload), options=options, choices=n)
        # Held text is read event by event: the fast paths relay unread what it must hold.
        general = options is not None and (not options.fast_paths or options.hold_text)
        reader = ToolCallFilter if general else FastToolCallFilter
        return reader(judge, options=options, model=self.model(payload))

    def stream_answer(self, stream: bytes) -> Answer | None:
        return answers.stream_answer(stream)

    def stream_prepend_text(self, stream: bytes, text: str) -> bytes:
        return answers.stream_prepend_text(stream, text)

    # --- replies the gateway writes ---------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        return replies.termination_completion(text, self.model(payload), choices=_choices(payload))

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        options = payload.get("stream_options")
        include_usage = bool(options.get("include_usage")) if isinstance(options, dict) else False
        return replies.termination_stream(
            text, self.model(payload), include_usage=include_usage, choices=_choices(payload)
        )

    def error_body(self, message: str, type: str, code: str | None = None) -> dict[str, Any]:
        return error_body(message, type, code=code)

    def error_event(self, body: dict[str, Any]) -> bytes:
        return data_event(body)

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        dropped = ("tool_choice", "function_call", "functions", "parallel_tool_calls")
        out = {k: v for k, v in payload.items() if k not in dropped}
        if "tools" in out:  # "none" is only accepted next to declared tools
            out["tool_choice"] = "none"
        return out

    def item_text(self, item: Any) -> ItemText:
        return tokens.item_text(item)

    def output_tokens(self, answer: bytes) -> int | None:
        return usage.reported(answer, ("usage", "completion_tokens"))


def _choices(payload: dict[str, Any]) -> int:
    """How many choices the client asked for (``n``); the gateway's own replies have as many."""
    n = payload.get("n")
    return n if type(n) is int and n > 1 else 1


CHAT = ChatAdapter()
