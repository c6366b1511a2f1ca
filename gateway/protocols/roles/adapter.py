"""A protocol as the gateway sees it: its declaration and the roles it plays.

``Kind`` is what is known of a protocol before any app runs (its routes, how it reads a
request, how it shapes its own replies): shared, immutable, listed in ``registry``. ``Adapter``
is one app's protocol: ``Kind.build()`` makes a fresh one, with whatever memory the protocol
keeps between the calls of an exchange (refused call kinds, withheld calls, a server-side
chain's size), so two apps never share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.protocols.declaration import Declaration
from gateway.protocols.roles.authored import Authored
from gateway.protocols.roles.edits import Edits
from gateway.protocols.roles.history import History
from gateway.protocols.roles.replies import Replies
from gateway.protocols.roles.requests import Requests
from gateway.protocols.roles.streams import Streams


@dataclass(frozen=True, slots=True)
class Adapter:
    """One protocol in one app. The pipeline (``gateway.pipeline``) reads a request through
    ``requests``, writes interventions through ``edits``, judges a reply through ``replies`` or
    ``streams``, answers through ``authored``, and (only when ``history`` is not None) rebuilds
    and stores a server-side conversation."""

    name: str  # "chat", "responses", "anthropic", "gemini": metrics label, log field, replay key
    declared: Declaration  # routes, upstream, id fields, ...: what the rest of the gateway reads
    requests: Requests
    edits: Edits
    replies: Replies
    streams: Streams
    authored: Authored
    history: History | None = None  # None: every request carries its whole conversation
    # The adapter for one request on a declared route, bound to what the path says (Google's
    # model and streaming live in the path, not the body); None: it is this adapter for every
    # path. A binding that answers None: the request is the protocol's but not guarded.
    binds: Callable[[dict[str, Any]], Adapter | None] | None = None

    def at(self, scope: dict[str, Any]) -> Adapter | None:
        """The adapter for one request (see ``binds``)."""
        return self if self.binds is None else self.binds(scope)

    def outgoing(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        """What goes upstream for ``items``: a protocol with server-kept history decides
        (``History.outgoing``); for the rest the items replace the payload's own."""
        if self.history is None:
            return self.requests.with_items(payload, items)
        return self.history.outgoing(payload, items, history, namespace)


@dataclass(frozen=True, slots=True)
class Kind:
    """A protocol before any app: what routing, refusals, replay and savings read, and how
    each app builds its own ``Adapter``."""

    name: str
    declared: Declaration
    requests: Requests  # reading a request needs no memory: the same in every app
    authored: Authored
    build: Callable[[], Adapter]  # a fresh adapter, with its own memory, for one app
