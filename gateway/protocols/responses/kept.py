"""Conversations the Responses upstream keeps, and one app's memory of them: the ``History`` role.

A request naming ``previous_response_id`` carries only its new items: ``history`` rebuilds the
earlier ones from the record ``remember`` stored per response (``chain``); one naming a
``conversation`` is rebuilt the same way from the conversation's record (``conversation``).
``history`` notes what it supplied (how many items, the upstream's id, their fingerprint), so
``outgoing`` of the same request can send only what the upstream does not hold. The notes are
this object's, built per app with the app's ``Seen`` (``protocol.build``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.protocols.adapters import Recent, stored_record
from gateway.protocols.responses import chain, conversation, parse, replies, rewrite
from gateway.protocols.responses.seen import Seen
from gateway.protocols.roles.history import History
from gateway.state.base import StateStore


def references(payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """The previous response and the conversation a request names, as given: a value no id is
    (a list, an object, a number) is refused by the caller, never skipped."""
    if not isinstance(payload, dict):
        return []
    previous = payload.get("previous_response_id")
    talk = payload.get("conversation")
    if isinstance(talk, dict):
        talk = talk.get("id", talk)  # ``{"id": "conv_..."}``; without one, the object itself
    return [
        (kind, value) for kind, value in (("response", previous), ("conversation", talk)) if value not in (None, "")
    ]


def created(payload: dict[str, Any], reply: Any) -> list[tuple[str, str]]:
    """A stored reply (``store`` not false) is a response a later request may name."""
    reply_id = reply.get("id") if isinstance(reply, dict) else None
    stored = not (isinstance(payload, dict) and payload.get("store") is False)
    return [("response", reply_id)] if stored and isinstance(reply_id, str) and reply_id else []


def unchanged(payload: dict[str, Any], namespace: str = "") -> dict[str, Any]:
    """A Responses request reads the same with its chain: nothing to put back."""
    return payload


class Kept:
    def __init__(self, seen: Seen) -> None:
        self.seen = seen
        # Keyed like the records (``chain.key``: the client's namespace and the response id),
        # so one client's request never meets what another's left here.
        # previous_response_id -> (items ``history`` supplied, the upstream's id, their fingerprint)
        self.history_sizes = Recent()
        self.named = Recent()  # the upstream's id a request was sent with -> the client's
        self.unknown = Recent(1024)  # previous ids already logged as unknown (logged once)
        # Conversation records as ``history`` read them (keyed like records).
        self.conversations = Recent()

    def role(self) -> History:
        return History(self.history, self.remember, unchanged, created, references, self.outgoing)

    async def history(self, payload: dict[str, Any], store: StateStore, namespace: str) -> list[Any]:
        talk = conversation.conversation_id(payload)
        if talk is not None:
            self.seen.pending_of(talk)
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
        items = [*record.items, *record.owed]  # owed outputs last: outgoing sends them
        self.history_sizes.put(key, (len(items), record.upstream_id, chain.fingerprint(items)))
        return items

    def outgoing(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        """Items the upstream holds already (``history`` of them, from the chain) are not sent
        again, except outputs owed for calls it proposed there. When the gateway changed the
        chain's earlier items, the whole conversation goes, without ``previous_response_id``.
        The client's own payload object comes back when it can go upstream as it is."""
        talk = conversation.conversation_id(payload)
        if talk is not None:
            record = self.conversations.get(conversation.key(namespace, talk)) or conversation.EMPTY
            pending = self.seen.pending_of(talk)
            custom = set(self.seen.custom_calls)
            return conversation.outgoing(payload, items, history, record, pending, custom, chain.WITHHELD)
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
        if not upstream and len(sent) == len(own) and all(a is b for a, b in zip(sent, own, strict=False)):
            return payload
        if upstream:
            self.named.put(chain.key(namespace, upstream), previous)
            payload = {**payload, "previous_response_id": upstream}
        return rewrite.with_items(payload, sent)

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
        owed = self.seen.owed(response_id)
        record = chain.next_record(prior, parse.input_items(sent), replies.output_items(reply), owed)
        upstream = self.seen.aliases.pop(response_id, None)
        await store.save_response_chain(chain.key(namespace, response_id), replace(record, upstream_id=upstream))

    async def _remember_conversation(
        self, talk: str, client: dict[str, Any], reply: dict[str, Any], store: StateStore, namespace: str
    ) -> None:
        key = conversation.key(namespace, talk)
        self.seen.pending.pop(talk, None)
        prior = self.conversations.pop(key, None) or await store.response_chain(key)
        owed = self.seen.owed(reply["id"])
        record = conversation.next_record(prior, client, replies.output_items(reply), owed)
        await store.save_response_chain(key, record)
