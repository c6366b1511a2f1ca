"""The state-store interface: what the gateway remembers between requests of one session.

Requests carry the whole conversation, so most decisions need no state at all. What they cannot
carry is what the agent never saw: the tool calls the gateway vetoed. Those exchanges are kept
here, keyed by session and by a hash of the conversation prefix they follow, and shown to the
model again in later requests.
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


class StateStore(Protocol):
    async def vetoes(self, session: str) -> list[VetoRecord]:
        """The session's vetoed exchanges, oldest first; empty when unknown or unavailable."""
        ...

    async def add_veto(self, session: str, record: VetoRecord) -> None: ...

    async def aclose(self) -> None: ...
