"""Shared state on Redis, for several gateway replicas serving one fleet of agents.

Decisions must not depend on which replica serves a request, so vetoed exchanges and history
marks live here instead of in each process. Redis is an aid, never a dependency of traffic:

- every operation runs under ``op_timeout_s`` (a slow Redis must not slow requests down);
- any error or timeout is logged (the URL's password never), counted in ``degradations``, and
  answered with "nothing stored": the request is judged from what it carries alone;
- after a failure, Redis is left alone for ``retry_after_s`` (requests don't each pay a timeout
  while it is down), then tried again; redis-py's pool opens fresh connections, so a restarted
  server is used again without any action.

Redis is one node, a Redis Cluster or a Sentinel-watched primary (``state.mode``,
``gateway.state.redis_topology``); the client follows failovers and moved slots by itself.

Keys (``gateway.state.redis_keys``: a session's keys carry the session as their hash tag, so
every script stays in one cluster slot): ``{prefix}v:{<session>}`` (list of vetoed exchanges,
trimmed to the newest ``MAX_VETOES_PER_SESSION``), ``{prefix}h:{<session>}`` (the history mark),
``{prefix}c:{<session>}`` (the compaction marker, while one applies), ``{prefix}w:{<session>}``
(the calls warned about, newest ``MAX_WARNED_PER_SESSION``), ``{prefix}j:{<session>}`` (the
model judge's latest verdict, only where the opt-in judge runs). Every key carries a TTL,
refreshed by every request of the session, so an idle session disappears by itself.
``{prefix}r:{client namespace}{response_id}`` holds a response chain record
(``previous_response_id``), and ``{prefix}r:{namespace}own:{kind}:{id}`` an ownership claim
(``gateway.state.claims``), under the same TTL. Each tenant's sessions and records are bounded
by its own caps, kept in its own indexes (``gateway.state.redis_budgets``).

Ownership claims are also noted by this process (``gateway.state.ledger``): while Redis cannot
answer, a check is answered from them (and an id the process cannot vouch for is let through,
counted in ``claims_unverified``), and claims Redis did not take are written once it answers.

A request whose session this process knows (``gateway.state.mirror``: nothing stored but the
mark its own previous request wrote, kept true by Redis's invalidation messages) costs no round
trip: the new mark is written behind the reply, coalesced with the other requests of the same
loop turn into one command. Any other request costs one round trip: one script reads the vetoes
and the compaction marker, swaps the history mark (``SET ... GET``, Redis >= 6.2) and refreshes
the TTLs and, on one node (a single server, a Sentinel-watched primary), notes the session in
its tenant's index; on a cluster, whose tenant index lives in another slot, that note is a
second command sent beside the read (one round trip's time, two nodes). Only a compaction starting or
ending, or a fingerprint session starting a new run while it holds vetoed exchanges (they are
deleted), writes more, fire-and-forget.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from enum import Enum
from functools import partial
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import structlog

from gateway.state.base import (
    CLAIM,
    EMPTY,
    MAX_WARNED_PER_SESSION,
    ChainRecord,
    HistoryMark,
    SessionState,
    VetoRecord,
    dump_verdict,
    dump_warned,
    load_verdict,
    load_warned,
)
from gateway.state.events import LoggedEvent
from gateway.state.invalidations import listen
from gateway.state.ledger import DEFAULT_MAX_CLAIMS, Ledger
from gateway.state.memory import MAX_VETOES_PER_SESSION
from gateway.state.mirror import COMPACTED, MARK, TRACKED, VERDICT, VETOES, WARNED, Known, Mirror
from gateway.state.redis_budgets import (
    NOTE_RECORD,
    NOTE_SESSIONS,
    RECORD_INDEX,
    RECORD_SIZES,
    SESSION_INDEX,
    TOUCH_SESSIONS,
)
from gateway.state.redis_events import RedisEventLog
from gateway.state.redis_keys import session_key, tenant_key
from gateway.state.redis_topology import Address, Mode, Target, topology
from gateway.state.shares import TENANT_CAP, record_weight, tenant_of
from gateway.trace.model import JudgeVerdict, WarnedCall

T = TypeVar("T")


class _Failed(Enum):
    """What an operation that Redis did not answer returns (a value no command returns)."""

    FAILED = "failed"


_FAILED = _Failed.FAILED
# Tenants' indexes noted at once by one write behind: with the marks' pipeline, an operation keeps
# within ``redis_topology.COMMANDS_PER_OPERATION`` commands in flight on one node.
_TENANTS_AT_ONCE = 2
# Append a veto unless one with the same identity is stored; trim and expire in the same step.
_APPEND_ONCE = """
for _, item in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local ok, stored = pcall(cjson.decode, item)
  if ok and stored['k'] == ARGV[2] then return 0 end
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
"""
# What a request reads, in one command: the vetoes, the previous mark (swapped for this
# request's when one is given, ARGV[1] empty otherwise), the compaction marker, the warned calls
# and the model judge's verdict; a request keeps the session alive, so what it has is given the
# TTL (ARGV[2]) again. All five keys carry the session's hash tag: one slot.
_READ_BODY = """
local vetoes = redis.call('LRANGE', KEYS[1], 0, -1)
local previous
if ARGV[1] == '' then
  previous = redis.call('GET', KEYS[2])
else
  previous = redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'GET')
end
local compacted = redis.call('GET', KEYS[3])
local warned = redis.call('LRANGE', KEYS[4], 0, -1)
local verdict = redis.call('GET', KEYS[5])
if ARGV[1] ~= '' then
  if #vetoes > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  if compacted then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
  if #warned > 0 then redis.call('PEXPIRE', KEYS[4], ARGV[2]) end
  if verdict then redis.call('PEXPIRE', KEYS[5], ARGV[2]) end
end
"""
_READ = _READ_BODY + "return {vetoes, previous, compacted, warned, verdict}\n"
# The same read with the session noted as its tenant's most recently used (KEYS[6] the tenant's
# session index; ARGV[3] now in ms, ARGV[4] the tenant's session cap, ARGV[5] the session), for
# one node, where a script may reach keys of any slot: the read is one command. The sessions the
# note trimmed come sixth.
_READ_NOTED = (
    NOTE_SESSIONS
    + _READ_BODY
    + """
local trimmed = note_sessions(KEYS[6], tonumber(ARGV[3]), tonumber(ARGV[2]), tonumber(ARGV[4]), 5)
return {vetoes, previous, compacted, warned, verdict, trimmed}
"""
)

# The marks of a loop turn's requests written behind them, their sessions noted in their tenant's
# index in the same script, on one node (KEYS[1] the tenant's session index, KEYS[2...] the
# sessions' mark keys; ARGV[1] now in ms, ARGV[2] the TTL, ARGV[3] the tenant's session cap,
# then the marks, then the sessions). The sessions the note trimmed.
_WRITE_MARKS_NOTED = (
    NOTE_SESSIONS
    + """
local count = #KEYS - 1
for i = 1, count do redis.call('SET', KEYS[i + 1], ARGV[3 + i], 'PX', ARGV[2]) end
return note_sessions(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), 4 + count)
"""
)


class RedisStore:
    def __init__(
        self,
        url: str,
        *,
        mode: Mode = "single",
        sentinels: tuple[Address, ...] = (),
        service: str = "",
        key_prefix: str = "loopguard:",
        ttl_s: float = 3600.0,
        op_timeout_s: float = 0.1,
        retry_after_s: float = 1.0,
        max_connections: int = 64,
        max_pending_writes: int = 1024,
        mirror_sessions: int = 10_000,
        tenant_max_sessions: int = 10_000,
        tenant_max_chain_bytes: int = 64 * 1024 * 1024,
        local_claims: int = DEFAULT_MAX_CLAIMS,
    ) -> None:
        self.url = url
        self.key_prefix = key_prefix
        self.ttl_ms = max(1, round(ttl_s * 1000))
        self.op_timeout_s = op_timeout_s
        self.retry_after_s = retry_after_s
        self.max_pending_writes = max_pending_writes
        self.degradations = 0
        self.tenant_max_sessions = tenant_max_sessions
        self.tenant_max_chain_bytes = tenant_max_chain_bytes
        # Trimmed to keep each tenant within its budget (``redis_budgets``), by kind; keys also
        # expire by their TTL, which is not counted.
        self.budget_evictions: Counter[tuple[str, str]] = Counter()
        self.evictions = 0  # sessions trimmed (in ``budget_evictions`` too)
        self.claims_unverified = 0  # ownership checks let through: the store could not tell
        self.ledger = Ledger(local_claims, ttl_s)
        self.where = redacted_url(url)
        self._password = urlsplit(url).password
        self.topology = topology(
            Target(mode, url, sentinels, service, max_connections=max_connections, timeout_s=max(op_timeout_s, 0.5))
        )
        self._client = self.topology.client()
        self._down_until = 0.0
        self._healthy = True
        self._writing_claims = False
        self._pending: set[asyncio.Task[object]] = set()
        self._append_once = self._client.register_script(_APPEND_ONCE)
        self._read_script = self._client.register_script(_READ)
        # A Redis Cluster keeps a tenant's index in another slot than the session's keys: there
        # the note is a command of its own, sent beside the read.
        one_node = mode != "cluster"
        self._read_noted = self._client.register_script(_READ_NOTED) if one_node else None
        self._write_noted = self._client.register_script(_WRITE_MARKS_NOTED) if one_node else None
        self._touch_sessions = self._client.register_script(TOUCH_SESSIONS)
        self._note_record = self._client.register_script(NOTE_RECORD)
        # 0 turns the mirror off: every request reads Redis.
        self.mirror = Mirror(key_prefix, mirror_sessions) if mirror_sessions else None
        self._listener: asyncio.Task[None] | None = None
        self._marks_due: dict[str, tuple[HistoryMark, bytes]] = {}  # session -> mark to write behind
        self._events = RedisEventLog(self._client, key_prefix, self.where)  # the console's, off the request path

    # --- the StateStore interface -------------------------------------------------------------

    async def session_state(self, session: str, mark: HistoryMark | None = None) -> SessionState:
        mirror = self.mirror
        if mirror is not None:
            self._listen()
            known = mirror.known(session) if mark is not None else None
            if known is not None and mark is not None and time.monotonic() >= self._down_until:
                previous = known.mark
                self._write_mark_behind(session, known, mark)
                return SessionState(mark=previous)
            epoch = mirror.begin_read(session)
            if mark is not None:
                mirror.expect(session)  # the read script writes the mark
        state = await self._run("session_state", lambda: self._read(session, mark))
        if mirror is not None:
            only_mark = state is not _FAILED and mark is not None and state in (EMPTY, SessionState(mark=state.mark))
            mirror.end_read(session, epoch, Known(mark, time.monotonic()) if only_mark and mark is not None else None)
        return EMPTY if state is _FAILED else state

    async def vetoes(self, session: str) -> list[VetoRecord]:
        return list((await self.session_state(session)).vetoes)

    async def add_veto(self, session: str, record: VetoRecord) -> None:
        self._forget(session)
        await self._run("add_veto", lambda: self._append(session, record))

    def mark_compacted(self, session: str, mark: HistoryMark | None) -> None:
        self._forget(session)
        self._background("mark_compacted", lambda: self._write_compacted(session, mark))

    def add_warned(self, session: str, warned: WarnedCall) -> None:
        self._forget(session)
        self._background("add_warned", lambda: self._push_warned(session, warned))

    def save_verdict(self, session: str, verdict: JudgeVerdict) -> None:
        self._forget(session)
        name, raw = self.key(VERDICT, session), dump_verdict(verdict)
        self._background("save_verdict", lambda: self._client.set(name, raw, px=self.ttl_ms))

    def end_run(self, session: str) -> None:
        self._forget(session)
        self._background(
            "end_run", lambda: self._client.delete(*(self.key(kind, session) for kind in (VETOES, WARNED, VERDICT)))
        )

    def _forget(self, session: str) -> None:
        """Writes other than the mark make the session one that reads Redis (at once: the
        invalidation that would say so arrives only after the write)."""
        if self.mirror is not None:
            self.mirror.forget(session)

    def _background(self, op: str, command: Callable[[], Awaitable[object]]) -> bool:
        """A fire-and-forget write, off the request's path (``flush`` waits for them)."""
        if len(self._pending) >= self.max_pending_writes:  # Redis cannot keep up: shed, don't queue
            self.degradations += 1
            return False
        task = asyncio.get_running_loop().create_task(self._run(op, command))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return True

    async def response_chain(self, key: str) -> ChainRecord | None:
        record = await self._run("response_chain", lambda: self._load_chain(self.record_key(key)))
        return record if isinstance(record, ChainRecord) else None

    async def save_response_chain(self, key: str, record: ChainRecord) -> None:
        raw = record.dumps()
        await self._run("save_response_chain", lambda: self._write_record(key, raw))

    async def claimed(self, key: str) -> bool | None:
        """Redis's answer while it answers (a claim made during an outage and not written yet
        counts); this process's own note of the claim while it does not (``gateway.state.ledger``),
        and None for an id this process cannot vouch for either."""
        found = await self._run("claimed", lambda: self._client.exists(self.record_key(key)))
        if found is _FAILED:
            if self.ledger.knows(key):
                return True
            self.claims_unverified += 1
            return None
        return bool(found) or self.ledger.waiting(key)

    async def save_claim(self, key: str) -> None:
        self.ledger.made(key)
        if await self._run("save_claim", lambda: self._write_record(key, CLAIM)) is _FAILED:
            self.ledger.unwritten(key)

    async def add_event(self, entry: bytes, detail: bytes | None = None, keep: int = 1000) -> None:
        await self._events.add(entry, detail, keep)

    async def recent_events(self, count: int, after: str = "") -> list[LoggedEvent]:
        return await self._events.recent(count, after)

    async def event_detail(self, ref: str) -> bytes | None:
        return await self._events.detail(ref)

    async def revoke_console_session(self, ref: str, ttl_s: float) -> None:
        await self._events.revoke(ref, ttl_s)

    async def console_session_revoked(self, ref: str) -> bool:
        return await self._events.revoked(ref)

    async def save_label(self, run: str, entry: bytes) -> None:
        await self._events.save_label(run, entry)

    async def labels(self) -> dict[str, bytes]:
        return await self._events.labels()

    async def flush(self) -> None:
        """Wait for the fire-and-forget writes in flight (each is bounded by op_timeout_s)."""
        if self._marks_due:
            self._background("save_marks", self._save_marks)
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=self.op_timeout_s * 2)

    # --- what the fleet's memory runs on (gateway.state.fleet_redis) --------------------------

    @property
    def client(self) -> Any:
        return self._client

    async def run(self, op: str, command: Callable[[], Awaitable[T]]) -> T | None:
        """``command`` under the operation timeout and the store's degradation; None when Redis
        did not answer."""
        found = await self._run(op, command)
        return None if found is _FAILED else found

    def background(self, op: str, command: Callable[[], Awaitable[object]]) -> bool:
        """``command`` fire-and-forget, off the request's path, as the store's own writes."""
        return self._background(op, command)

    # --- the mirror ---------------------------------------------------------------------------

    @property
    def _mirror(self) -> Mirror:
        """The mirror, in the methods only a store that keeps one reaches."""
        if self.mirror is None:
            raise RuntimeError("this RedisStore keeps no mirror")
        return self.mirror

    def _listen(self) -> None:
        """Start (once per event loop) the connection that keeps the mirror true."""
        listener = self._listener
        if listener is not None and not listener.done() and listener.get_loop() is asyncio.get_running_loop():
            return
        self._mirror.lost()  # a listener of another (closed) event loop hears nothing any more
        self._listener = asyncio.get_running_loop().create_task(
            listen(self.topology, self._mirror, retry_after_s=self.retry_after_s, where=self.where)
        )

    def _write_mark_behind(self, session: str, known: Known, mark: HistoryMark) -> None:
        """The request goes on at once; its mark is written after it, with the marks of every
        other request of this loop turn in one command. An unchanged mark is written again only
        to refresh its TTL, once a tenth of the TTL has passed."""
        now = time.monotonic()
        if mark == known.mark and (now - known.written_at) * 1000 < self.ttl_ms / 10:
            return
        if session not in self._marks_due:  # one write, one echo, however many requests
            self._mirror.expect(session)
        self._mirror.wrote(session, mark, now)
        first = not self._marks_due
        self._marks_due[session] = (mark, mark.dumps())
        if first and not self._background("save_marks", self._save_marks):
            self._drop_marks_due()

    def _drop_marks_due(self) -> None:
        due, self._marks_due = self._marks_due, {}
        for session in due:  # not written: those sessions read Redis next time
            self._mirror.forget(session)

    async def _save_marks(self) -> None:
        await asyncio.sleep(0)  # the other requests of this loop turn add theirs first
        due, self._marks_due = self._marks_due, {}
        if not due:
            return
        try:
            if self._write_noted is not None:
                await self._write_marks_noted(due)
            else:
                marks = self._client.pipeline(transaction=False)  # one round trip per node
                for session, (_, raw) in due.items():
                    marks.set(self.key(MARK, session), raw, px=self.ttl_ms)
                await asyncio.gather(marks.execute(), self._touch(list(due)))
        except BaseException:
            for session in due:  # they may not have landed: those sessions read Redis next time
                self._mirror.forget(session)
            raise

    async def _write_marks_noted(self, due: dict[str, tuple[HistoryMark, bytes]]) -> None:
        """On one node: each tenant's marks written and its sessions noted in one script."""
        assert self._write_noted is not None
        by_tenant: dict[str, list[str]] = {}
        for session in due:
            by_tenant.setdefault(tenant_of(session), []).append(session)
        groups = list(by_tenant.values())
        trimmed: list[bytes] = []
        for at in range(0, len(groups), _TENANTS_AT_ONCE):
            writes = [
                self._write_noted(
                    keys=[tenant_key(self.key_prefix, SESSION_INDEX, group[0]), *(self.key(MARK, s) for s in group)],
                    args=[_now_ms(), self.ttl_ms, self.tenant_max_sessions, *(due[s][1] for s in group), *group],
                )
                for group in groups[at : at + _TENANTS_AT_ONCE]
            ]
            trimmed += [raw for found in await asyncio.gather(*writes) for raw in found]
        if trimmed:
            await self._drop_sessions(trimmed)

    async def ping(self) -> bool:
        try:
            async with asyncio.timeout(self.op_timeout_s):
                return bool(await self._client.ping())
        except Exception:
            return False

    async def aclose(self) -> None:
        await self.flush()  # let in-flight writes land
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await self._listener
        await self._client.aclose()
        await self.topology.aclose()

    # --- Redis commands -----------------------------------------------------------------------

    def key(self, kind: str, session: str) -> str:
        """A session's key (``gateway.state.redis_keys``: the session is its hash tag)."""
        return session_key(self.key_prefix, kind, session)

    def record_key(self, key: str) -> str:
        """A chain record's or claim's key: no hash tag, records spread over a cluster's slots."""
        return f"{self.key_prefix}r:{key}"

    async def _read(self, session: str, mark: HistoryMark | None) -> SessionState:
        """One script on the session's slot; with a mark, the session is also noted as its
        tenant's most recently used: in the same script on one node, in a second command sent
        beside it on a cluster (its tenant's index lives in another slot)."""
        keys = [self.key(kind, session) for kind in (VETOES, MARK, COMPACTED, WARNED, VERDICT)]
        if mark is None:
            found = await self._read_script(keys=keys, args=[b"", self.ttl_ms])
        elif self._read_noted is not None:
            index = tenant_key(self.key_prefix, SESSION_INDEX, session)
            args = [mark.dumps(), self.ttl_ms, _now_ms(), self.tenant_max_sessions, session]
            *found, trimmed = await self._read_noted(keys=[*keys, index], args=args)
            if trimmed:
                await self._drop_sessions(trimmed)
        else:  # a cluster: the note goes to its tenant's slot beside the read, in parallel
            read = self._read_script(keys=keys, args=[mark.dumps(), self.ttl_ms])
            found, _ = await asyncio.gather(read, self._touch([session]))
        raw_vetoes, raw_mark, raw_compacted, raw_warned, raw_verdict = found
        vetoes = tuple(VetoRecord.loads(raw) for raw in raw_vetoes)
        previous = HistoryMark.loads(raw_mark) if raw_mark is not None else None
        compacted = HistoryMark.loads(raw_compacted) if raw_compacted is not None else None
        warned = tuple(dict.fromkeys(load_warned(raw) for raw in raw_warned))
        verdict = load_verdict(raw_verdict) if raw_verdict is not None else None
        if not (vetoes or previous or compacted or warned or verdict):
            return EMPTY
        return SessionState(vetoes, previous, compacted, warned, verdict)

    async def _append(self, session: str, record: VetoRecord) -> None:
        # One script: replicas serving parallel requests of a session store a veto once.
        await self._append_once(
            keys=[self.key(VETOES, session)],
            args=[record.dumps(), record.identity, MAX_VETOES_PER_SESSION, self.ttl_ms],
        )

    async def _push_warned(self, session: str, warned: WarnedCall) -> None:
        key = self.key(WARNED, session)
        pipe = self._client.pipeline(transaction=False)
        pipe.rpush(key, dump_warned(warned))
        pipe.ltrim(key, -MAX_WARNED_PER_SESSION, -1)
        pipe.pexpire(key, self.ttl_ms)
        await pipe.execute()

    async def _write_record(self, key: str, raw: bytes) -> None:
        """A chain record or claim, noted in its tenant's byte budget (``redis_budgets``); the
        tenant's oldest records beyond it are deleted."""
        name = self.record_key(key)
        _, trimmed = await asyncio.gather(
            self._client.set(name, raw, px=self.ttl_ms),
            self._note_record(
                keys=[tenant_key(self.key_prefix, RECORD_INDEX, key), tenant_key(self.key_prefix, RECORD_SIZES, key)],
                args=[name, self.ttl_ms, _now_ms(), self.tenant_max_chain_bytes, record_weight(key, raw)],
            ),
        )
        if trimmed:
            await self._delete([[name] for name in trimmed])
        self.budget_evictions["records", TENANT_CAP] += len(trimmed)

    async def _touch(self, sessions: list[str]) -> None:
        """Note ``sessions`` as just used in their tenants' indexes, and delete the keys of each
        tenant's least recently used sessions beyond its cap."""
        by_tenant: dict[str, list[str]] = {}
        for session in sessions:
            by_tenant.setdefault(tenant_of(session), []).append(session)
        trimmed: list[bytes] = []
        groups = list(by_tenant.values())
        for at in range(0, len(groups), _TENANTS_AT_ONCE):
            notes = [
                self._touch_sessions(
                    keys=[tenant_key(self.key_prefix, SESSION_INDEX, group[0])],
                    args=[_now_ms(), self.ttl_ms, self.tenant_max_sessions, *group],
                )
                for group in groups[at : at + _TENANTS_AT_ONCE]
            ]
            trimmed += [raw for found in await asyncio.gather(*notes) for raw in found]
        if trimmed:
            await self._drop_sessions(trimmed)

    async def _drop_sessions(self, trimmed: list[bytes]) -> None:
        """Delete the keys of the sessions a tenant's index trimmed."""
        sessions = [raw.decode("utf-8", "surrogateescape") for raw in trimmed]
        await self._delete([self._keys_of(session) for session in sessions])
        self._sessions_trimmed(len(sessions))

    async def _delete(self, groups: list[list[str]]) -> None:
        """Delete keys, one command per group (a group's keys share a slot), in one pipeline: one
        round trip per node."""
        pipe = self._client.pipeline(transaction=False)
        for keys in groups:
            pipe.delete(*keys)
        await pipe.execute()

    def _keys_of(self, session: str) -> list[str]:
        return [self.key(kind, session) for kind in TRACKED]

    def _sessions_trimmed(self, count: int) -> None:
        self.evictions += count
        self.budget_evictions["sessions", TENANT_CAP] += count

    def _write_claims_behind(self) -> None:
        """Claims Redis did not take, written now that it answers (off the request's path,
        one at a time, each under the operation timeout; stops at the first failure)."""
        if not self.ledger.pending or self._writing_claims:
            return
        self._writing_claims = True
        task = asyncio.get_running_loop().create_task(self._write_claims())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _write_claims(self) -> None:
        try:
            while (key := self.ledger.next_unwritten()) is not None:
                if await self._run("save_claim", partial(self._write_record, key, CLAIM)) is _FAILED:
                    return
                self.ledger.written(key)
        finally:
            self._writing_claims = False

    async def _load_chain(self, key: str) -> ChainRecord | None:
        raw = await self._client.get(key)
        return ChainRecord.loads(raw) if raw is not None else None

    async def _write_compacted(self, session: str, mark: HistoryMark | None) -> None:
        if mark is None:
            await self._client.delete(self.key(COMPACTED, session))
        else:
            await self._client.set(self.key(COMPACTED, session), mark.dumps(), px=self.ttl_ms)

    # --- degradation --------------------------------------------------------------------------

    async def _run(self, op: str, command: Callable[[], Awaitable[T]]) -> T | Literal[_Failed.FAILED]:
        if time.monotonic() < self._down_until:
            self.degradations += 1
            return _FAILED
        try:
            async with asyncio.timeout(self.op_timeout_s), self.topology.gate():
                result = await command()
        except Exception as exc:
            self._degraded(op, exc)
            return _FAILED
        if not self._healthy:
            self._healthy = True
            structlog.get_logger("loopguard").info("state_recovered", backend="redis", redis=self.where)
        if self.ledger.pending:
            self._write_claims_behind()
        return result

    def _degraded(self, op: str, exc: Exception) -> None:
        self.degradations += 1
        self._healthy = False
        self._down_until = time.monotonic() + self.retry_after_s
        detail = str(exc) or ("timed out" if isinstance(exc, TimeoutError) else "")
        if self._password:
            detail = detail.replace(self._password, "***")
        structlog.get_logger("loopguard").warning(
            "state_degraded",
            backend="redis",
            op=op,
            error=type(exc).__name__,
            detail=detail[:200],
            redis=self.where,
            retry_after_s=self.retry_after_s,
        )


def _now_ms() -> int:
    """Wall-clock milliseconds: the budget indexes' scores, compared across replicas."""
    return int(time.time() * 1000)


def redacted_url(url: str) -> str:
    """The URL without its password, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()
