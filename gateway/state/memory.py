"""The default store: in process, bounded by an LRU of sessions and a TTL on each."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field

from gateway.state.base import VetoRecord

# A session that keeps getting vetoed is terminated long before this; the cap only bounds memory.
MAX_VETOES_PER_SESSION = 64


@dataclass(slots=True)
class _Entry:
    touched: float
    vetoes: list[VetoRecord] = field(default_factory=list)


class MemoryStore:
    def __init__(self, max_sessions: int = 10_000, ttl_s: float = 3600.0) -> None:
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.evictions = 0
        self._sessions: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    async def vetoes(self, session: str) -> list[VetoRecord]:
        entry = self._live(session)
        return list(entry.vetoes) if entry else []

    async def add_veto(self, session: str, record: VetoRecord) -> None:
        entry = self._live(session) or self._create(session)
        entry.vetoes.append(record)
        del entry.vetoes[:-MAX_VETOES_PER_SESSION]

    async def aclose(self) -> None:
        self._sessions.clear()

    def _live(self, session: str) -> _Entry | None:
        entry = self._sessions.get(session)
        if entry is None:
            return None
        now = time.monotonic()
        if now - entry.touched > self.ttl_s:
            del self._sessions[session]
            self.evictions += 1
            return None
        entry.touched = now
        self._sessions.move_to_end(session)
        return entry

    def _create(self, session: str) -> _Entry:
        entry = self._sessions[session] = _Entry(time.monotonic())
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
            self.evictions += 1
        return entry
