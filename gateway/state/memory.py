"""The default store: in process, bounded per tenant and in total, with a TTL on everything.

Every bound is kept per tenant (the namespace each key starts with, ``gateway.state.shares``),
so one tenant's volume evicts only its own state: a tenant beyond ``tenant_max_sessions`` loses
its own least recently used session, and when all tenants together exceed ``max_sessions`` the
tenant holding the most loses its least recently used one (counted in ``evictions``). Sessions
idle for longer than ``ttl_s`` are dropped when met (counted in ``expirations``). Every request
leaves its session's history mark: about 400 bytes per session (measured at 10,000 sessions),
about 1.4 KB with one vetoed exchange: the default bound of 10,000 sessions is about 4 MB of
marks; vetoed exchanges add about 1 KB each, at most MAX_VETOES_PER_SESSION per session.
Response chains (``previous_response_id``) and ownership claims are kept serialized, within
``tenant_max_chain_bytes`` per tenant and ``max_chain_bytes`` in total (fair share again, each
tenant's oldest first; a record counts its key and overhead too), and by the same TTL.

Vetoed exchanges are bounded in bytes too: each record's long strings are shortened before it
is stored (``state.bounds``), and all of them together stay within ``max_veto_bytes`` (the
tenant holding the most loses its least recently used session holding any). Sessions and
chains idle past the TTL are swept on a timer, not only when met, so memory is given back when
traffic goes away.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from itertools import islice, takewhile

import structlog

from gateway.state.base import (
    CLAIM,
    EMPTY,
    MAX_LABELS,
    MAX_WARNED_PER_SESSION,
    ChainRecord,
    HistoryMark,
    SessionState,
    VetoRecord,
)
from gateway.state.events import DEFAULT_MAX_BYTES, EventRing, LoggedEvent, Revocations, RunLabels
from gateway.state.shares import FAIR_SHARE, Heaviest, Shares, record_weight, tenant_of
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
        tenant_max_sessions: int | None = None,
        tenant_max_chain_bytes: int | None = None,
    ) -> None:
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.max_veto_bytes = max_veto_bytes
        self._vetoes_held = Heaviest()  # each tenant's vetoed exchanges, serialized
        self._sweeper: asyncio.TimerHandle | None = None
        self.evictions = 0  # dropped by a bound: raise max_sessions if this keeps growing
        self.expirations = 0  # dropped after ttl_s idle
        self.vetoes_evicted = 0  # sessions dropped for the veto byte budget (in ``evictions`` too)
        self._sessions: Shares[_Entry] = Shares(max_sessions, tenant_max_sessions)
        self._chains = _Chains(max_chain_bytes, ttl_s, tenant_max_chain_bytes)
        self._events = EventRing(max_event_bytes)  # the console's recent events
        self._revoked = Revocations()  # the console's signed-out sign-ins
        self._labels = RunLabels(MAX_LABELS)  # the console's run labels

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def veto_bytes(self) -> int:
        """All sessions' vetoed exchanges, serialized."""
        return sum(self._vetoes_held.weights.values())

    @property
    def budget_evictions(self) -> Counter[tuple[str, str]]:
        """What the bounds evicted, by kind (sessions, vetoes, records) and rule (tenant_cap,
        fair_share): the metrics' ``loopguard_state_budget_evictions``."""
        out: Counter[tuple[str, str]] = Counter()
        for kind, shares in (("sessions", self._sessions.evicted), ("records", self._chains.kept.evicted)):
            out.update({(kind, rule): count for rule, count in shares.items()})
        if self.vetoes_evicted:
            out["vetoes", FAIR_SHARE] = self.vetoes_evicted
        return out

    @property
    def sessions(self) -> Shares[_Entry]:
        return self._sessions

    @property
    def records(self) -> Shares[tuple[float, bytes]]:
        """Chain records and ownership claims, with their bounds."""
        return self._chains.kept

    @property
    def chain_bytes(self) -> int:
        return self._chains.size

    def budgets(self) -> dict[str, tuple[int, int]]:
        """By kind: (tenants holding any, tenants at 90% of their own cap or more)."""
        return {
            "sessions": (len(self._sessions.held.weights), self._sessions.at_cap()),
            "records": (len(self._chains.kept.held.weights), self._chains.kept.at_cap()),
        }

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
        self._set_vetoes(session, entry, (*entry.vetoes, record)[-MAX_VETOES_PER_SESSION:])
        while self.veto_bytes > self.max_veto_bytes and len(self._sessions) > 1:
            if not self._evict_vetoes():
                break

    def _set_vetoes(self, session: str, entry: _Entry, vetoes: tuple[VetoRecord, ...]) -> None:
        size = sum(len(v.dumps()) for v in vetoes)  # a veto is rare: measured when it changes
        self._vetoes_held.add(tenant_of(session), size - entry.veto_bytes)
        entry.vetoes, entry.veto_bytes = vetoes, size

    def _evict_vetoes(self) -> bool:
        """Over the veto byte budget: the tenant holding the most vetoed exchanges loses its
        least recently used session that holds any (fair share, as for every other bound)."""
        tenant = self._vetoes_held.top()
        if tenant is None:
            return False
        victim = next((key for key, entry in self._sessions.oldest(tenant) if entry.veto_bytes), None)
        if victim is None:
            return False
        self._remove(victim)
        self.evictions += 1
        self.vetoes_evicted += 1
        return True

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
            self._set_vetoes(session, entry, ())
            entry.warned = ()
            entry.verdict = None

    async def ping(self) -> bool:
        return True  # in-process: nothing can be unreachable

    async def response_chain(self, key: str) -> ChainRecord | None:
        raw = self._chains.get(key)
        return ChainRecord.loads(raw) if raw is not None else None

    async def save_response_chain(self, key: str, record: ChainRecord) -> None:
        self._chains.put(key, record.dumps())

    async def claimed(self, key: str) -> bool | None:
        return self._chains.get(key) is not None  # in-process: always answers

    async def save_claim(self, key: str) -> None:
        self._chains.put(key, CLAIM)

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

    async def save_label(self, run: str, entry: bytes) -> None:
        if not self._labels.save(run, entry):
            structlog.get_logger("loopguard").warning("console_labels_full", kept=MAX_LABELS)

    async def labels(self) -> dict[str, bytes]:
        return self._labels.all()

    async def aclose(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self._sessions.clear()
        self._vetoes_held.clear()
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
        return entry

    def _create(self, session: str) -> _Entry:
        now = time.monotonic()
        self._drop_expired(tenant_of(session), now, limit=16)
        entry = _Entry(now)
        for key, evicted in self._sessions.put(session, entry, 1):
            self._vetoes_held.add(tenant_of(key), -evicted.veto_bytes)
            self.evictions += 1
        self._schedule_sweep()
        return entry

    def _drop_expired(self, tenant: str, now: float, limit: int | None = None) -> None:
        """Each tenant's LRU order is its idle order, so its expired sessions sit at the front;
        a few are dropped per new session of the tenant (O(1) per call), the rest by the sweep."""
        front = islice(self._sessions.oldest(tenant), limit)
        for key in [key for key, _ in takewhile(lambda item: now - item[1].touched > self.ttl_s, front)]:
            self._remove(key)
            self.expirations += 1

    def _remove(self, session: str) -> None:
        entry = self._sessions.pop(session)
        if entry is not None:
            self._vetoes_held.add(tenant_of(session), -entry.veto_bytes)

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
        now = time.monotonic()
        for tenant in self._sessions.tenants():
            self._drop_expired(tenant, now)
        self._chains.expire()
        if len(self._sessions) or self._chains.size:
            self._schedule_sweep()


class _Chains:
    """Serialized chain records and ownership claims by key (a namespaced id): each tenant's in
    LRU order within its own byte cap, all of them within a total byte budget (``Shares``), and
    a TTL on each."""

    def __init__(self, max_bytes: int, ttl_s: float, tenant_max_bytes: int | None = None) -> None:
        self.ttl_s = ttl_s
        self.kept: Shares[tuple[float, bytes]] = Shares(max_bytes, tenant_max_bytes)

    @property
    def size(self) -> int:
        return self.kept.total

    def get(self, key: str) -> bytes | None:
        found = self.kept.get(key)
        if found is None:
            return None
        if time.monotonic() - found[0] > self.ttl_s:
            self.kept.pop(key)
            return None
        return found[1]

    def put(self, key: str, raw: bytes) -> None:
        self.kept.put(key, (time.monotonic(), raw), record_weight(key, raw))

    def clear(self) -> None:
        self.kept.clear()

    def expire(self) -> None:
        """Records are kept in write order within a tenant only while unread, so every record is
        looked at (the sweep runs once a minute at most)."""
        now = time.monotonic()
        for tenant in self.kept.tenants():
            stale = [key for key, (saved, _) in self.kept.oldest(tenant) if now - saved > self.ttl_s]
            for key in stale:
                self.kept.pop(key)
