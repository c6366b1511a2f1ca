"""One app's memory of Anthropic message threads, and the ``History`` role it plays.

``history`` reads a thread's record from the store and keeps it here, so that ``outgoing``
(what goes upstream) and ``restored`` (what the guard judges) of the same request read the same
record without a second lookup, and ``remember`` builds the next record on it. The memory is
this object's, built per app (``protocol.KIND.build``): two apps never read each other's.
The rules of threads themselves are in ``thread``.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.adapters import Recent, stored_record
from gateway.protocols.anthropic import thread
from gateway.protocols.anthropic.rewrite import with_messages
from gateway.protocols.roles.history import History
from gateway.state.base import ChainRecord, StateStore


class Threads:
    def __init__(self) -> None:
        # Keyed like the records (the client's namespace and the message id).
        self.records = Recent()  # previous_message_id -> its record, as ``history`` read it
        self.continuing = Recent()  # previous_message_id -> the upstream message a request continued
        self.unknown = Recent(1024)  # ids already logged as unknown (logged once)

    def role(self) -> History:
        return History(
            history=self.history,
            remember=self.remember,
            restored=self.restored,
            created=thread.created,
            references=thread.references,
            outgoing=self.outgoing,
        )

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

    def restored(self, payload: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        previous = thread.previous_id(payload)
        if previous is None:
            return payload
        return thread.restored(payload, self.records.get(thread.key(namespace, previous)))

    def outgoing(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        """A thread the gateway read goes as ``thread.outgoing`` says (noting the upstream
        message it continues); any other request carries ``items`` as its messages."""
        previous = thread.previous_id(payload)
        record = self.records.get(thread.key(namespace, previous)) if previous is not None else None
        if previous is None or record is None:
            return with_messages(payload, items)
        sent, continued = thread.outgoing(payload, items, history, record)
        if continued is not None:
            self.continuing.put(thread.key(namespace, previous), continued)
        return sent

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
