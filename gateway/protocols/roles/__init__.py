"""The roles a protocol plays for the gateway, each a small set of functions with one rule.

A protocol (``Adapter``) composes them: ``Requests`` reads a request and writes its items back,
``Edits`` writes the gateway's interventions into items, ``Replies`` reads and amends a whole
reply, ``Streams`` relays and reads an event stream, ``Authored`` writes the replies the gateway
makes up itself, and ``History`` (optional) keeps what a server-side conversation needs. Each
role is a frozen dataclass of the protocol's own functions (or bound methods of the one object
that holds that protocol's per-app memory): nothing forwards to anything.
"""

from gateway.protocols.roles.adapter import Adapter, Kind
from gateway.protocols.roles.authored import Authored
from gateway.protocols.roles.edits import Edits
from gateway.protocols.roles.history import History
from gateway.protocols.roles.replies import Replies
from gateway.protocols.roles.requests import Requests
from gateway.protocols.roles.streams import Streams

__all__ = ["Adapter", "Authored", "Edits", "History", "Kind", "Replies", "Requests", "Streams"]
