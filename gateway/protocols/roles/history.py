"""``History``: a conversation the upstream keeps server-side (Responses' ``previous_response_id``
and conversations, Anthropic's message threads), which a request only refers to.

Only such protocols have one (``Adapter.history``); a protocol whose every request carries its
whole conversation has none, and then a request refers to nothing and creates nothing. The
object behind it holds this app's memory of the exchanges it saw (built per app, never shared).
Rule: a client only ever reads back what was stored for the same client (``namespace``), and an
unknown or foreign reference is judged on what the request carries alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.state.base import StateStore

Payload = dict[str, Any]


class Recall(Protocol):
    """(payload, store, namespace): see ``History.history``."""

    def __call__(self, payload: Payload, store: StateStore, namespace: str, /) -> Awaitable[list[Any]]: ...


class Remember(Protocol):
    """See ``History.remember``."""

    def __call__(
        self,
        sent: Payload,
        reply: Payload,
        store: StateStore,
        namespace: str,
        client: Payload | None = None,
        untouched: bool = False,
    ) -> Awaitable[None]: ...


class Outgoing(Protocol):
    """See ``History.outgoing``."""

    def __call__(self, payload: Payload, items: list[Any], history: int = 0, namespace: str = "", /) -> Payload: ...


@dataclass(frozen=True, slots=True)
class History:
    # Entries that precede the request's own but that it does not carry, oldest first,
    # rebuilt from what ``remember`` stored for the same client (``namespace``, see
    # ``gateway.state.session.client_namespace``); they are judged with the request's items.
    # [] when none or unknown.
    history: Recall
    # (sent, reply, store, namespace, client, untouched): after a reply reached the client.
    # ``sent`` is the last body the upstream got (the re-ask, when there was one), ``reply``
    # the reply (a stream's ``StreamFilter.reply``), ``client`` the client's own body;
    # ``untouched``: the upstream holds exactly what the client saw of this exchange. Stores
    # what a later ``history`` of the same client needs. Never raises on odd input.
    remember: Remember
    # (payload, namespace): the payload as a request carrying the whole conversation reads
    # (an Anthropic thread's ``system`` and ``tools`` put back): the guard judges this one.
    restored: Callable[[Payload, str], Payload]
    # (payload, reply): the server-side objects ``reply`` creates that a later request may
    # name, as (kind, id), like ``references``.
    created: Callable[[Payload, Any], list[tuple[str, str]]]
    # The server-side objects a request names, as (kind, id): ``response``, ``thread``,
    # ``conversation``; the id as the request gives it, so a value no id is (a list, an object)
    # is refused (400) rather than skipped. With a server-side upstream key, an id not seen
    # created for the caller's tenant is refused (404).
    references: Callable[[Payload], list[tuple[str, Any]]]
    # (payload, items, history, namespace): what goes upstream: the payload carrying
    # ``items``, of which the first ``history`` are what ``history`` supplied, unchanged (an
    # upstream that holds them need not get them again; 0: none, or an edit touched them, so
    # ``items`` go whole). ``payload`` itself comes back when the client's bytes can go as
    # they are.
    outgoing: Outgoing
