"""The Anthropic Messages API as a pipeline adapter (``gateway.protocols.base.Adapter``).

``items`` are the request's ``messages``. The system prompt lives outside them: it is read into
the conversation from the payload, and a warning placed there travels in the item list as a
``SystemNote`` until ``with_items`` moves it into ``system``. Everything else is delegated:
parse (messages -> turns), rewrite (anchors, results, refused calls), replies (a reply's calls,
termination, errors), answers (a whole answer read and amended), stream (the tool_use filter).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols import usage
from gateway.protocols.adapters import PayloadFields, Recent, stored_record
from gateway.protocols.anthropic import answers, assemble, parse, replies, rewrite, thread, tokens
from gateway.protocols.anthropic.stream import ToolUseFilter
from gateway.protocols.base import Answer, ItemText, Judge, StreamOptions
from gateway.protocols.declaration import Declaration, Owned, UpstreamSpec
from gateway.state.base import ChainRecord, StateStore
from gateway.trace.model import Conversation, ToolCall

__all__ = ["ANTHROPIC", "AnthropicAdapter"]


class AnthropicAdapter(PayloadFields):
    name = "anthropic"
    items_field = "messages"  # see Adapter.items_field
    reply_types = (dict,)  # see Adapter.reply_types
    payload_fields = ("system", "tools")  # see Adapter.payload_fields
    # Message threads (``thread``) keep the conversation server-side: see ``thread``.
    chains = True
    declared = Declaration(
        family="anthropic.messages",
        routes=("/v1/messages", "/messages"),
        # The key goes as x-api-key (its SDK's ``ANTHROPIC_BASE_URL`` is the API root).
        upstream=UpstreamSpec(
            config="anthropic",
            default_base_url="https://api.anthropic.com",
            key_header="x-api-key",
            key_prefix="",
            credentials=("x-api-key", "authorization"),
            root_suffix="/v1",
        ),
        relays=("/v1/messages/{rest:path}", "/messages/{rest:path}"),  # count_tokens
        id_fields=frozenset({"id", "tool_use_id"}),
        auth_error_type="authentication_error",
        reads=parse.is_messages_body,
        # A thread's previous message; ``thread_not_found`` makes the SDK send the whole history.
        owned=(Owned("thread", "Thread message", "thread_not_found"),),
    )

    def __init__(self) -> None:
        # Keyed like the records (the client's namespace and the message id).
        self.records = Recent()  # previous_message_id -> its record, as ``history`` read it
        self.continuing = Recent()  # previous_message_id -> the upstream message a request continued
        self.unknown = Recent(1024)  # ids already logged as unknown (logged once)

    # --- the request ----------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        messages = payload.get("messages") if isinstance(payload, dict) else None
        return messages if isinstance(messages, list) else []

    def conversation(self, payload: dict[str, Any], items: list[Any], start: int = 0) -> Conversation:
        return parse.conversation(payload, items, start)

    def with_items(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        previous = thread.previous_id(payload)
        record = self.records.get(thread.key(namespace, previous)) if previous is not None else None
        if record is None:
            return rewrite.with_messages(payload, items)
        sent, continued = thread.outgoing(payload, items, history, record)
        if continued is not None:
            self.continuing.put(thread.key(namespace, previous), continued)
        return sent

    # --- message threads (``thread``) ---------------------------------------------------------

    def restored(self, payload: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        previous = thread.previous_id(payload)
        if previous is None:
            return payload
        return thread.restored(payload, self.records.get(thread.key(namespace, previous)))

    def references(self, payload: dict[str, Any]) -> list[tuple[str, str]]:
        previous = thread.previous_id(payload)
        return [("thread", previous)] if previous is not None else []

    def created(self, payload: dict[str, Any], reply: dict[str, Any]) -> list[tuple[str, str]]:
        reply_id = reply.get("id") if isinstance(reply, dict) else None
        threaded = thread.thread_of(payload) is not None
        return [("thread", reply_id)] if threaded and isinstance(reply_id, str) and reply_id else []

    async def history(self, payload: dict[str, Any], store: StateStore, namespace: str) -> list[Any]:
        previous = thread.previous_id(payload)
        if previous is None:
            return []
        key = thread.key(namespace, previous)
        record = await stored_record(
            store,
            key,
            self.unknown,
            "thread_unknown",
            previous_message_id=previous,
            detail="judging only the messages the request carries",
        )
        if record is None:
            return []
        self.records.put(key, record)
        return list(record.items)

    async def remember(
        self,
        sent: dict[str, Any],
        reply: dict[str, Any],
        store: StateStore,
        namespace: str,
        client: dict[str, Any] | None = None,
        untouched: bool = False,
    ) -> None:
        client = client if client is not None else sent
        reply_id = reply.get("id") if isinstance(reply, dict) else None
        if thread.thread_of(client) is None or not isinstance(reply_id, str) or not reply_id:
            return
        previous = thread.previous_id(client)
        prior: ChainRecord | None = None
        continued = None
        if previous is not None:
            key = thread.key(namespace, previous)
            prior = self.records.get(key) or await store.response_chain(key)
            if prior is None:
                return  # an unknown thread: nothing to build on
            continued = self.continuing.pop(key, None)
        record = thread.next_record(prior, client, reply, untouched, continued)
        if record is not None:
            await store.save_response_chain(thread.key(namespace, reply_id), record)

    def user(self, payload: dict[str, Any]) -> str | None:
        """``metadata.user_id``: the Messages API's only end-user field (Claude Code puts its
        session's id in it), the counterpart of OpenAI's ``user``."""
        metadata = payload.get("metadata")
        user = metadata.get("user_id") if isinstance(metadata, dict) else None
        return user if isinstance(user, str) and user else None

    # --- interventions on the request ------------------------------------------------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        return rewrite.add_anchor(items, text, placement)

    def result_index(self, items: list[Any], call_id: str, after: int) -> int | None:
        return rewrite.result_index(items, call_id, after)

    def replace_result(self, items: list[Any], index: int, text: str, call_id: str) -> list[Any]:
        return rewrite.replace_result(items, index, text, call_id)

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        return rewrite.veto_exchange(call, observation)

    def corrective(self, answer: str, text: str) -> list[Any]:
        return answers.corrective(answer, text)

    # --- the reply (a message has no alternatives: one answer) -------------------------------

    def proposed_calls(self, reply: dict[str, Any]) -> list[tuple[ToolCall, ...]]:
        return [replies.proposed_calls(reply)]

    def keep_calls(self, reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
        return replies.keep_calls(reply, keep[0]) if keep else reply

    def answer(self, reply: dict[str, Any]) -> Answer | None:
        return answers.answer(reply)

    def prepend_text(self, reply: dict[str, Any], text: str) -> dict[str, Any]:
        return answers.prepend_text(reply, text)

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> ToolUseFilter:
        if thread.thread_of(payload) is not None:  # its reply is remembered: the filter keeps it
            return assemble.Recording(judge, model=self.model(payload), options=options)
        return ToolUseFilter(judge, model=self.model(payload), options=options)

    def stream_answer(self, stream: bytes) -> Answer | None:
        return answers.stream_answer(stream)

    def stream_prepend_text(self, stream: bytes, text: str) -> bytes:
        return answers.stream_prepend_text(stream, text)

    # --- replies the gateway writes ---------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        return replies.termination_message(text, self.model(payload))

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        return replies.termination_stream(text, self.model(payload))

    def error_body(self, message: str, type: str, code: str | None = None) -> dict[str, Any]:
        return replies.error_body(message, type, code)

    def error_event(self, body: dict[str, Any]) -> bytes:
        return replies.error_event(body)

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        return rewrite.without_tools(payload)

    def item_text(self, item: Any) -> ItemText:
        return tokens.item_text(item)

    def output_tokens(self, answer: bytes) -> int | None:
        return usage.reported(answer, ("usage", "output_tokens"), ("message", "usage", "output_tokens"))


ANTHROPIC = AnthropicAdapter()
