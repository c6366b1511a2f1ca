"""What a replay reads: runs, each the requests one agent run made, in its client's protocol.

A ``Segment`` is one growing conversation, kept as its last request body: the request before
each assistant message is that body's items up to it. A run is one segment, or several when the
client compacted its history (each compaction starts a conversation that no longer holds the
earlier messages, and the session carries on across it). Message indexes are counted over the
whole run (``Run.base``), so a run's rows, its cut and its savings are read the same way
whatever the number of segments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.protocols.registry import BY_NAME
from gateway.protocols.roles import Kind
from gateway.trace.model import Conversation


@dataclass(slots=True)
class Segment:
    body: dict[str, Any]
    protocol: str  # the adapter's name (``gateway.protocols.registry.BY_NAME``)
    requests: int = 1  # recorded bodies merged into it (request-body logs)
    _items: list[Any] | None = field(default=None, repr=False)

    @property
    def kind(self) -> Kind:
        return BY_NAME[self.protocol]

    @property
    def path(self) -> str:
        """The route the client sends it to (policies may match on it): its protocol's first."""
        return self.kind.declared.routes[0]

    @property
    def messages(self) -> list[Any]:
        """The body's conversation items (``Requests.items``), read once."""
        if self._items is None:
            self._items = self.kind.requests.items(self.body)
        return self._items

    def conversation(self) -> Conversation:
        return self.kind.requests.conversation(self.body, self.messages)


@dataclass(slots=True)
class Run:
    name: str  # its path relative to the argument it was found under (":<line>": one of many in a file)
    id: str  # the session id as the log records it (or the path when it records none)
    format: str  # the log format's name (``gateway.replay.logs.FORMATS``)
    segments: list[Segment]
    file: str = ""  # the file (or events folder) it was read from, as given or found
    # The client's agent profile, applied when the requests do not name their client (a log
    # that records no tool declarations or system prompt).
    profile: str | None = None
    agent: str | None = None  # the agent the log itself names (a labelled corpus), if any
    model: str | None = None  # the model the log names where the requests do not (Gemini's path)
    label: str | None = None  # a label the log itself carries
    loop_at: int | None = None
    # Sent as ``x-loopguard-session``: a log naming its session has every segment judged as one
    # session, as a client naming it would. None: the gateway's own derivation (a fingerprint).
    session: str | None = None
    # Request bodies naming no session: a conversation may continue the session of one read
    # before it (the agent compacted in between), so such runs share the replay's store.
    shared_state: bool = False

    @property
    def protocol(self) -> str:
        return self.segments[0].protocol

    @property
    def path(self) -> str:
        """The route its requests go to (``Segment.path``)."""
        return self.segments[0].path

    @property
    def body(self) -> dict[str, Any]:
        """Its first segment's body (a run of request bodies has one segment)."""
        return self.segments[0].body

    def conversation(self) -> Conversation:
        return self.segments[0].conversation()

    @property
    def kind(self) -> Kind:
        return self.segments[0].kind

    @property
    def requests(self) -> int:
        return sum(s.requests for s in self.segments)

    @property
    def messages(self) -> int:
        return sum(len(s.messages) for s in self.segments)

    def base(self, segment: int) -> int:
        """The run-wide index of the first message of segment ``segment``."""
        return sum(len(s.messages) for s in self.segments[:segment])

    def items_from(self, index: int) -> list[Any]:
        """The messages from run-wide index ``index`` on: what a stop there would have saved."""
        out: list[Any] = []
        start = 0
        for segment in self.segments:
            items = segment.messages
            if index < start + len(items):
                out += items[max(0, index - start) :]
            start += len(items)
        return out
