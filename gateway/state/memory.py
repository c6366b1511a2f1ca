"""The default store: in process, bounded by an LRU of sessions and a TTL on each.

Memory is bounded by ``max_sessions`` whatever the traffic: a new session beyond the bound
evicts the least recently used one (counted in ``evictions``), and sessions idle for longer than
``ttl_s`` are dropped when met (counted in ``expirations``). Every request leaves its session's
history mark: about 370 bytes per session, about 1.4 KB with one vetoed exchange (measured at
10,000 sessions by ``benchmarks/state.py``): the default bound of 10,000 sessions is about 4 MB
of marks; vetoed exchanges add about 1 KB each, at most MAX_VETOES_PER_SESSION per session.
Response chains (``previous_response_id``) are kept serialized, bounded by ``max_chain_bytes``
in total (oldest dropped first) and by the same TTL.

Vetoed exchanges are bounded in bytes too: each record's long strings are shortened before it
is stored (``state.bounds``), and all of them together stay within ``max_veto_bytes`` (least
recently used sessions evicted first). Sessions and chains idle past the TTL are swept on a
timer, not only when met, so memory is given back when traffic goes away.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass

from gateway.state.base import (
    EMPTY,
    MAX_WARNED_PER_SESSION,
    ChainRecord,
    HistoryMark,
    SessionState,
    VetoRecord,
)
from gateway.state.events import DEFAULT_MAX_BYTES, EventRing, LoggedEvent, Revocations
from gateway.trace.model import JudgeVerdict, WarnedCall

# A session that keeps getting vetoed is terminated long before this; the cap only bounds memory.
MAX_VETOES_PER_SESSION = 64
# How often idle sessions and chains are swept (or every ttl_s, when shorter).
SWEEP_EVERY_S = 60.0


@dataclass(slots=True)
class _Entry:
    touched: float
    vetoes: tuple[VetoRecord, ...] = ()  # a tuple: most sessions share the empty one
    mark: HistoryMark | None = None
    compacted: HistoryMark | None = None
    veto_bytes: int = 0  # serialized size of ``vetoes``
    warned: tuple[WarnedCall, ...] = ()
    verdict: JudgeVerdict | None = None

    def state(self) -> SessionState:
        return SessionState(self.vetoes, self.mark, self.compacted, self.warned, self.verdict)


class MemoryStore:
    degradations = 0  # nothing here can be unavailable

    def __init__(
        self,
        max_sessions: int = 10_000,
        ttl_s: float = 3600.0,
        max_chain_bytes: int = 64 * 1024 * 1024,
        max_event_bytes: int = DEFAULT_MAX_BYTES,
        max_veto_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.max_veto_bytes = max_veto_bytes
        self.veto_bytes = 0  # all sessions' vetoed exchanges, serialized
        self._sweeper: asyncio.TimerHandle | None = None
        self.evictions = 0  # dropped by the LRU bound: raise max_sessions if this keeps growing
        self.expirations = 0  # dropped after ttl_s idle
        self._sessions: OrderedDict[str, _Entry] = OrderedDict()
        self._chains = _Chains(max_chain_bytes, ttl_s)
        self._events = EventRing(max_event_bytes)  # the console's recent events
        self._revoked = Revocations()  # the console's signed-out sign-ins

    def __len__(self) -> int:
        return len(self._sessions)

    async def session_state(self, session: str, mark: HistoryMark | None = None) -> SessionState:
        entry = self._live(session)
        if mark is None:
            return entry.state() if entry else EMPTY
        if entry is None:
            self._create(session).mark = mark
            return EMPTY
        state = entry.state()
        entry.mark = mark
        return state

    async def vetoes(self, session: str) -> list[VetoRecord]:
        entry = self._live(session)
        return list(entry.vetoes) if entry else []

    async def add_veto(self, session: str, record: VetoRecord) -> None:
        entry = self._live(session) or self._create(session)
        identity = record.identity
        if any(v.identity == identity for v in entry.vetoes):
            return  # the same refusal, from a parallel request of the session
        self._set_vetoes(entry, (*entry.vetoes, record)[-MAX_VETOES_PER_SESSION:])
        while self.veto_bytes > self.max_veto_bytes and len(self._sessions) > 1:
            self._pop_oldest()
            self.evictions += 1

    def _set_vetoes(self, entry: _Entry, vetoes: tuple[VetoRecord, ...]) -> None:
        size = sum(len(v.dumps()) for v in vetoes)  # a veto is rare: measured when it changes
        self.veto_bytes += size - entry.veto_bytes
        entry.vetoes, entry.veto_bytes = vetoes, size

    def mark_compacted(self, session: str, mark: HistoryMark | None) -> None:
        entry = self._live(session)
        if entry is not None:
            entry.compacted = mark

    def add_warned(self, session: str, warned: WarnedCall) -> None:
        entry = self._live(session) or self._create(session)
        if warned not in entry.warned:
            entry.warned = (*entry.warned, warned)[-MAX_WARNED_PER_SESSION:]

    def save_verdict(self, session: str, verdict: JudgeVerdict) -> None:
        (self._live(session) or self._create(session)).verdict = verdict

    def end_run(self, session: str) -> None:
        entry = self._live(session)
        if entry is not None:
            self._set_vetoes(entry, ())
            entry.warned = ()
            entry.verdict = None

    async def ping(self) -> bool:
        return True  # in-process: nothing can be unreachable

    async def response_chain(self, key: str) -> ChainRecord | None:
        raw = self._chains.get(key)
        return ChainRecord.loads(raw) if raw is not None else None

    async def save_response_chain(self, key: str, record: ChainRecord) -> None:
        self._chains.put(key, record.dumps())

    async def add_event(self, entry: bytes, detail: bytes | None = None, keep: int = 1000) -> None:
        self._events.add(entry, detail, keep)

    async def recent_events(self, count: int, after: str = "") -> list[LoggedEvent]:
        return self._events.recent(count, after)

    async def event_detail(self, ref: str) -> bytes | None:
        return self._events.detail(ref)

    async def revoke_console_session(self, ref: str, ttl_s: float) -> None:
        now = time.time()
        self._revoked.revoke(ref, now + ttl_s, now)

    async def console_session_revoked(self, ref: str) -> bool:
        return self._revoked.revoked(ref, time.time())

    async def aclose(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self._sessions.clear()
        self.veto_bytes = 0
        self._chains.clear()
        self._events.clear()

    def _live(self, session: str) -> _Entry | None:
        entry = self._sessions.get(session)
        if entry is None:
            return None
        now = time.monotonic()
        if now - entry.touched > self.ttl_s:
            self._remove(session)
            self.expirations += 1
            return None
        entry.touched = now
        self._sessions.move_to_end(session)
        return entry

    def _create(self, session: str) -> _Entry:
        now = time.monotonic()
        self._drop_expired(now)
        entry = self._sessions[session] = _Entry(now)
        while len(self._sessions) > self.max_sessions:
            self._pop_oldest()
            self.evictions += 1
        self._schedule_sweep()
        return entry

    def _drop_expired(self, now: float, limit: int = 16) -> None:
        """The LRU order is the idle order, so expired sessions sit at the front; a few are
        dropped per new session, which keeps idle memory shrinking at O(1) cost per call."""
        for _ in range(limit):
            oldest = next(iter(self._sessions.values()), None)
            if oldest is None or now - oldest.touched <= self.ttl_s:
                return
            self._pop_oldest()
            self.expirations += 1

    def _pop_oldest(self) -> None:
        _, entry = self._sessions.popitem(last=False)
        self.veto_bytes -= entry.veto_bytes

    def _remove(self, session: str) -> None:
        entry = self._sessions.pop(session)
        self.veto_bytes -= entry.veto_bytes

    def _schedule_sweep(self) -> None:
        if self._sweeper is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # used outside a loop (replay, tests): swept when met
            return
        self._sweeper = loop.call_later(min(self.ttl_s, SWEEP_EVERY_S), self._sweep)

    def _sweep(self) -> None:
        """Everything idle past the TTL goes; again later while anything is left."""
        self._sweeper = None
        self._drop_expired(time.monotonic(), limit=len(self._sessions))
        self._chains.expire()
        if self._sessions or self._chains.size:
            self._schedule_sweep()


class _Chains:
    """Serialized chain records by key (a namespaced response id): LRU within a total byte budget, TTL on each."""

    def __init__(self, max_bytes: int, ttl_s: float) -> None:
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self.size = 0
        self._records: OrderedDict[str, tuple[float, bytes]] = OrderedDict()

    def get(self, key: str) -> bytes | None:
        found = self._records.get(key)
        if found is None:
            return None
        if time.monotonic() - found[0] > self.ttl_s:
            self._drop(key)
            return None
        self._records.move_to_end(key)
        return found[1]

    def put(self, key: str, raw: bytes) -> None:
        self._drop(key)
        if len(raw) > self.max_bytes:
            return
        self._records[key] = (time.monotonic(), raw)
        self.size += len(raw)
        while self.size > self.max_bytes:
            self._drop(next(iter(self._records)))

    def clear(self) -> None:
        self._records.clear()
        self.size = 0

    def expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, (saved, _) in self._records.items() if now - saved > self.ttl_s]:
            self._drop(key)

    def _drop(self, key: str) -> None:
        found = self._records.pop(key, None)
        if found is not None:
            self.size -= len(found[1])
