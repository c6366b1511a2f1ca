"""The state-store interface: what the gateway remembers between requests of one session.

Requests carry the whole conversation, so most decisions need no state at all. What they cannot
carry is what the agent never saw, or what it has since thrown away:

- the tool calls the gateway vetoed: kept keyed by session and by a hash of the conversation
  prefix they follow, and shown to the model again in later requests;
- where the session's history stood at its previous request (:class:`HistoryMark`), so that a
  history that suddenly got shorter (the agent compacted its context) arms the post-compaction
  guard.

Every store degrades instead of failing: an unavailable backend answers "nothing stored" and
counts it in ``degradations``, because a request must never fail for lack of state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import orjson


@dataclass(frozen=True, slots=True)
class VetoRecord:
    anchor_len: int  # number of client messages in the prefix the exchange follows
    anchor_hash: str  # prefix_hash() of those messages
    messages: tuple[dict[str, Any], ...]  # the wire messages to show: the call, then our observation

    def dumps(self) -> bytes:
        return orjson.dumps({"n": self.anchor_len, "h": self.anchor_hash, "m": self.messages})

    @classmethod
    def loads(cls, raw: bytes | str) -> VetoRecord:
        data = orjson.loads(raw)
        return cls(int(data["n"]), str(data["h"]), tuple(data["m"]))


@dataclass(frozen=True, slots=True)
class HistoryMark:
    """Where a session's history stood at its latest request: its client message count and
    the prefix hash over them (``rewrite.prefix_hashes``). When the history was compacted,
    ``compacted_len``/``compacted_hash`` mark the compacted request the history now extends:
    tool calls after it are the post-compaction calls."""

    length: int
    digest: str
    compacted_len: int | None = None
    compacted_hash: str | None = None

    def dumps(self) -> bytes:
        return orjson.dumps([self.length, self.digest, self.compacted_len, self.compacted_hash])

    @classmethod
    def loads(cls, raw: bytes | str) -> HistoryMark:
        length, digest, compacted_len, compacted_hash = orjson.loads(raw)
        return cls(int(length), str(digest), compacted_len, compacted_hash)


@dataclass(frozen=True, slots=True)
class SessionState:
    """Everything a request reads, fetched in one round trip."""

    vetoes: tuple[VetoRecord, ...] = ()
    mark: HistoryMark | None = None


EMPTY = SessionState()


class StateStore(Protocol):
    """Reads answer EMPTY / [] when the session is unknown or the backend is unavailable; writes
    are best effort. Neither raises. ``degradations`` counts operations the backend could not
    serve; ``evictions`` counts sessions dropped to stay within bounds (0 where the backend
    bounds itself, e.g. Redis TTLs)."""

    degradations: int
    evictions: int

    async def session_state(self, session: str) -> SessionState: ...

    async def vetoes(self, session: str) -> list[VetoRecord]:
        """The session's vetoed exchanges, oldest first."""
        ...

    async def add_veto(self, session: str, record: VetoRecord) -> None: ...

    def put_mark(self, session: str, mark: HistoryMark) -> None:
        """Record the history mark without waiting (fire and forget: off the request's path)."""
        ...

    async def aclose(self) -> None: ...
