"""The OpenAI Responses API (``POST /v1/responses``) as a pipeline adapter.

Items are the request's ``input`` items (a string input is one user message); ``instructions``
is read as the system prompt. Requests naming a ``previous_response_id`` carry only new items:
``history`` rebuilds the earlier ones from what ``remember`` stored per response (``chain``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gateway.protocols import usage
from gateway.protocols.adapters import PayloadFields, Recent, stored_record
from gateway.protocols.base import Answer, ItemText, Judge, StreamOptions
from gateway.protocols.declaration import Declaration, Owned
from gateway.protocols.errors import error_body
from gateway.protocols.responses import answers, chain, conversation, events, parse, replies, rewrite, tokens
from gateway.protocols.responses.stream import ResponsesStreamFilter
from gateway.state.base import StateStore
from gateway.trace.model import VETO_MARKER, Conversation, ToolCall, Turn

# The output the upstream gets for a call it proposed that the client never saw (see ``chain``).
WITHHELD = f"{VETO_MARKER} This call was not run: the gateway withheld it because the agent was looping."


class ResponsesAdapter(PayloadFields):
    name = "responses"
    items_field = "input"  # see Adapter.items_field
    reply_types = (dict,)  # see Adapter.reply_types
    payload_fields = ("instructions", "tools")  # see Adapter.payload_fields
    chains = True
    declared = Declaration(
        family="openai.responses",
        routes=("/v1/responses", "/responses"),
        id_fields=frozenset({"id", "call_id"}),
        reads=lambda body: "messages" not in body and bool(parse.input_items(body)),
        # Stored responses (GET, DELETE, input_items) and the Conversations API.
        owned=(
            Owned("response", "Previous response", "previous_response_not_found", "/v1/responses"),
            Owned(
                "conversation",
                "Conversation",
                "conversation_not_found",
                "/v1/conversations",
                creates=lambda answer: answer.get("id") if isinstance(answer, dict) else None,
            ),
        ),
    )

    def __init__(self) -> None:
        self.custom_calls = Recent()  # call id -> None: a refused call is re-shown as its own kind
        self.withheld = Recent()  # response id -> calls the client never saw (owed outputs)
        # Keyed like the records (``chain.key``: the client's namespace and the response id),
        # so one client's request never meets what another's left here.
        # previous_response_id -> (items ``history`` supplied, the upstream's id, their fingerprint)
        self.history_sizes = Recent()
        self.named = Recent()  # the upstream's id a request was sent with -> the client's
        self.unknown = Recent(1024)  # previous ids already logged as unknown (logged once)
        # The upstream's own reply ids are unique: keyed by them alone.
        self.aliases = Recent()  # the client's response id -> the upstream's (a continued stream)
        # ``conversation``: records as ``history`` read them (keyed like records), and each
        # conversation's position in the exchange in flight (keyed by the upstream's id).
        self.conversations = Recent()
        self.pending = Recent()

    # --- the request --------------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        return parse.input_items(payload)

    def conversation(self, payload: dict[str, Any], items: list[Any], start: int = 0) -> Conversation:
        conv = parse.conversation_from_items(items[start:], parse.declared_tools(payload), start)
        instructions = payload.get("instructions")
        if start or not isinstance(instructions, str) or not instructions:
            return conv
        return Conversation((Turn(-1, "system", instructions), *conv.turns), conv.tools)

    def with_items(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        """Items the upstream holds already (``history`` of them, from the chain) are not sent
        again, except outputs owed for calls it proposed there. When the gateway changed the
        chain's earlier items, the whole conversation goes, without ``previous_response_id``.
        The client's own payload object comes back when it can go upstream as it is."""
        talk = conversation.conversation_id(payload)
        if talk is not None:
            record = self.conversations.get(conversation.key(namespace, talk)) or conversation.EMPTY
            pending = self.pending.get(talk) or self._pending(talk)
            return conversation.outgoing(payload, items, history, record, pending, set(self.custom_calls), WITHHELD)
        previous = chain.previous_id(payload)
        known = self.history_sizes.get(chain.key(namespace, previous)) if previous is not None else None
        if known is None:  # no chain, or one the gateway does not know: the items are the request's
            return rewrite.with_items(payload, items)
        size, upstream, fingerprint = known
        sent = (
            [*chain.owed_tail(items[:history]), *items[history:]]
            if history
            else chain.by_reference(items, size, fingerprint)
        )
        if sent is None:
            whole = {k: v for k, v in payload.items() if k != "previous_response_id"}
            return rewrite.with_items(whole, chain.whole(items))
        own = parse.input_items(payload)
        if not upstream and len(sent) == len(own) and all(a is b for a, b in zip(sent, own)):
            return payload
        if upstream:
            self.named.put(chain.key(namespace, upstream), previous)
            payload = {**payload, "previous_response_id": upstream}
        return rewrite.with_items(payload, sent)

    # --- conversations the upstream keeps ------------------------------------------------------

    def restored(self, payload: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        return payload

    def references(self, payload: dict[str, Any]) -> list[tuple[str, str]]:
        previous = payload.get("previous_response_id") if isinstance(payload, dict) else None
        talk = conversation.conversation_id(payload)
        return [
            *((("response", previous),) if isinstance(previous, str) and previous else ()),
            *((("conversation", talk),) if talk is not None else ()),
        ]

    def created(self, payload: dict[str, Any], reply: dict[str, Any]) -> list[tuple[str, str]]:
        reply_id = reply.get("id") if isinstance(reply, dict) else None
        stored = not (isinstance(payload, dict) and payload.get("store") is False)
        return [("response", reply_id)] if stored and isinstance(reply_id, str) and reply_id else []

    async def history(self, payload: dict[str, Any], store: StateStore, namespace: str) -> list[Any]:
        talk = conversation.conversation_id(payload)
        if talk is not None:
            self._pending(talk)
            record = await store.response_chain(conversation.key(namespace, talk))
            if record is None:
                return []
            self.conversations.put(conversation.key(namespace, talk), record)
            return [*record.items, *record.owed]
        previous = chain.previous_id(payload)
        if previous is None:
            return []
        key = chain.key(namespace, previous)
        record = await stored_record(
            store,
            key,
            self.unknown,
            "chain_unknown",
            previous_response_id=previous,
            detail="judging only the items the request carries",
        )
        if record is None:
            return []
        items = [*record.items, *record.owed]  # owed outputs last: with_items sends them
        self.history_sizes.put(key, (len(items), record.upstream_id, chain.fingerprint(items)))
        return items

    async def remember(
        self,
        sent: dict[str, Any],
        reply: dict[str, Any],
        store: StateStore,
        namespace: str,
        client: dict[str, Any] | None = None,
        untouched: bool = False,
    ) -> None:
        response_id = reply.get("id") if isinstance(reply, dict) else None
        talk = conversation.conversation_id(client if client is not None else sent)
        if talk is not None and isinstance(response_id, str):
            await self._remember_conversation(talk, client if client is not None else sent, reply, store, namespace)
            return
        if not chain.recorded(sent) or not isinstance(response_id, str) or not response_id:
            return
        previous = chain.previous_id(sent)
        if previous is not None:  # the record is kept under the client's id
            previous = self.named.get(chain.key(namespace, previous), previous)
        prior = await store.response_chain(chain.key(namespace, previous)) if previous is not None else None
        dropped = self.withheld.pop(response_id, None) or []
        owed = chain.owed_outputs(dropped, WITHHELD, {c.id for c in dropped if c.id in self.custom_calls})
        record = chain.next_record(prior, parse.input_items(sent), replies.output_items(reply), owed)
        upstream = self.aliases.pop(response_id, None)
        await store.save_response_chain(chain.key(namespace, response_id), replace(record, upstream_id=upstream))

    async def _remember_conversation(
        self, talk: str, client: dict[str, Any], reply: dict[str, Any], store: StateStore, namespace: str
    ) -> None:
        key = conversation.key(namespace, talk)
        self.pending.pop(talk, None)
        prior = self.conversations.pop(key, None) or await store.response_chain(key)
        dropped = self.withheld.pop(reply["id"], None) or []
        owed = chain.owed_outputs(dropped, WITHHELD, {c.id for c in dropped if c.id in self.custom_calls})
        record = conversation.next_record(prior, client, replies.output_items(reply), owed)
        await store.save_response_chain(key, record)

    def _pending(self, talk: str) -> conversation.Pending:
        pending = self.pending.get(talk)
        if pending is None:
            pending = conversation.Pending()
            self.pending.put(talk, pending)
        return pending

    def _proposed(self, talk: str | None, calls: Sequence[ToolCall], first: bool) -> None:
        """The upstream proposed ``calls`` in conversation ``talk``: a re-ask must answer them."""
        pending = self.pending.get(talk) if talk is not None else None
        if pending is None:
            return
        if first or pending.answered:
            pending.round, pending.answered = list(calls), False
        else:
            pending.round.extend(calls)

    # --- interventions on the request ----------------------------------------------------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        return rewrite.add_anchor(items, text, placement)

    def result_index(self, items: list[Any], call_id: str, after: int) -> int | None:
        for index in range(max(after, 0) + 1, len(items)):
            item = items[index]
            if parse.item_type(item) in parse.OUTPUT_TYPES and item.get("call_id") == call_id:
                return index
        return None

    def replace_result(self, items: list[Any], index: int, text: str, call_id: str) -> list[Any]:
        return rewrite.replace_result(items, index, text)  # an output item answers one call

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        return rewrite.veto_exchange(call, observation, call.id in self.custom_calls)

    def corrective(self, answer: str, text: str) -> list[Any]:
        return [
            {"type": "message", "role": "assistant", "content": answer},
            {"type": "message", "role": "user", "content": text},
        ]

    # --- the reply ----------------------------------------------------------------------------

    def proposed_calls(self, reply: dict[str, Any]) -> list[tuple[ToolCall, ...]]:
        for call_id in replies.custom_call_ids(reply):
            self.custom_calls.put(call_id)
        calls = replies.proposed_calls(reply)
        held = reply.get("conversation") if isinstance(reply, dict) else None
        self._proposed(conversation.conversation_id({"conversation": held}), calls, True)
        return [calls]  # one answer: Responses has no alternatives

    def keep_calls(self, reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
        count = keep[0] if keep else len(replies.proposed_calls(reply))
        dropped = list(replies.proposed_calls(reply)[count:])
        if dropped and isinstance(reply.get("id"), str):
            self.withheld.put(reply["id"], dropped)
        return replies.keep_calls(reply, count)

    def answer(self, reply: dict[str, Any]) -> Answer | None:
        return answers.answer(reply)

    def prepend_text(self, reply: dict[str, Any], text: str) -> dict[str, Any]:
        return answers.prepend_text(reply, text)

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> ResponsesStreamFilter:
        talk = conversation.conversation_id(payload)
        on_round = None
        if talk is not None:  # each round and its calls are noted: a re-ask answers them
            inner = judge

            def judge(call: ToolCall, position: int, *rest: Any) -> bool:
                self._proposed(talk, (call,), False)
                return inner(call, position, *rest)

            def on_round() -> None:  # the upstream holds the request now, even for a round without calls
                self._proposed(talk, (), True)

        return ResponsesStreamFilter(
            judge,
            options,
            on_custom=self._custom_seen,
            on_withheld=self.withheld.put,
            on_alias=self.aliases.put,
            model=self.model(payload),
            on_round=on_round,
        )

    def stream_answer(self, stream: bytes) -> Answer | None:
        return answers.stream_answer(stream)

    def stream_prepend_text(self, stream: bytes, text: str) -> bytes:
        return answers.stream_prepend_text(stream, text)

    # --- replies the gateway writes ------------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        return replies.termination_reply(text, payload)

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        return events.termination_events(text, payload)

    def error_body(self, message: str, type: str, code: str | None = None) -> dict[str, Any]:
        return error_body(message, type, None, code)

    def error_event(self, body: dict[str, Any]) -> bytes:
        return events.error_event(body)

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        return rewrite.without_tools(payload)

    def item_text(self, item: Any) -> ItemText:
        return tokens.item_text(item)

    def output_tokens(self, answer: bytes) -> int | None:
        return usage.reported(answer, ("usage", "output_tokens"), ("response", "usage", "output_tokens"))

    def _custom_seen(self, ids: set[str]) -> None:
        for call_id in ids:
            self.custom_calls.put(call_id)


RESPONSES = ResponsesAdapter()
