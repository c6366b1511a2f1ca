"""Shared state on Redis, for several gateway replicas serving one fleet of agents.

Decisions must not depend on which replica serves a request, so vetoed exchanges and history
marks live here instead of in each process. Redis is an aid, never a dependency of traffic:

- every operation runs under ``op_timeout_s`` (a slow Redis must not slow requests down);
- any error or timeout is logged (the URL's password never), counted in ``degradations``, and
  answered with "nothing stored": the request is judged from what it carries alone;
- after a failure, Redis is left alone for ``retry_after_s`` (requests don't each pay a timeout
  while it is down), then tried again; redis-py's pool opens fresh connections, so a restarted
  server is used again without any action.

Keys: ``{prefix}v:{session}`` (list of vetoed exchanges, trimmed to the newest
``MAX_VETOES_PER_SESSION``), ``{prefix}h:{session}`` (the history mark) and
``{prefix}c:{session}`` (the compaction marker, while one applies), ``{prefix}w:{session}``
(the calls warned about, newest ``MAX_WARNED_PER_SESSION``), ``{prefix}j:{session}`` (the
model judge's latest verdict, only where the opt-in judge runs). Every key carries a TTL,
refreshed by every request of the session, so an idle session disappears by itself.
``{prefix}r:{client namespace}{response_id}`` holds a response chain record
(``previous_response_id``), under the same TTL; its size is bounded by the adapter that builds it.

A request costs one round trip: one pipeline reads the vetoes and the compaction marker, swaps
the history mark (``SET ... GET``, Redis >= 6.2) and refreshes the TTLs. Only a compaction
starting or ending, or a fingerprint session starting a new run while it holds vetoed exchanges
(they are deleted), writes more, fire-and-forget.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlsplit

import structlog
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gateway.state.base import (
    EMPTY, MAX_WARNED_PER_SESSION, ChainRecord, HistoryMark, SessionState, VetoRecord, dump_verdict,
    dump_warned, load_verdict, load_warned,
)
from gateway.state.events import LoggedEvent
from gateway.state.memory import MAX_VETOES_PER_SESSION
from gateway.state.redis_events import RedisEventLog
from gateway.trace.model import JudgeVerdict, WarnedCall

T = TypeVar("T")
_FAILED = object()
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


class RedisStore:
    evictions = 0  # Redis bounds itself: keys expire by TTL

    def __init__(self, url: str, *, key_prefix: str = "loopguard:", ttl_s: float = 3600.0,
                 op_timeout_s: float = 0.1, retry_after_s: float = 1.0, max_connections: int = 64,
                 max_pending_writes: int = 1024) -> None:
        self.key_prefix = key_prefix
        self.ttl_ms = max(1, round(ttl_s * 1000))
        self.op_timeout_s = op_timeout_s
        self.retry_after_s = retry_after_s
        self.max_pending_writes = max_pending_writes
        self.degradations = 0
        self.where = redacted_url(url)
        self._password = urlsplit(url).password
        # One immediate retry: a pooled connection to a server that has since restarted fails
        # once, and the retry on a fresh connection succeeds within the same operation.
        self._pool = BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=None, retry=Retry(NoBackoff(), 1),
            socket_connect_timeout=max(op_timeout_s, 0.5), socket_timeout=max(op_timeout_s, 0.5))
        self._client = Redis(connection_pool=self._pool)
        self._down_until = 0.0
        self._healthy = True
        self._pending: set[asyncio.Task[None]] = set()
        self._append_once = self._client.register_script(_APPEND_ONCE)
        self._events = RedisEventLog(self._client, key_prefix, self.where)  # the console's, off the request path

    # --- the StateStore interface -------------------------------------------------------------

    async def session_state(self, session: str, mark: HistoryMark | None = None) -> SessionState:
        state = await self._run("session_state", lambda: self._read(session, mark))
        return EMPTY if state is _FAILED else state

    async def vetoes(self, session: str) -> list[VetoRecord]:
        return list((await self.session_state(session)).vetoes)

    async def add_veto(self, session: str, record: VetoRecord) -> None:
        await self._run("add_veto", lambda: self._append(session, record))

    def mark_compacted(self, session: str, mark: HistoryMark | None) -> None:
        self._background("mark_compacted", lambda: self._write_compacted(session, mark))

    def add_warned(self, session: str, warned: WarnedCall) -> None:
        self._background("add_warned", lambda: self._push_warned(session, warned))

    def save_verdict(self, session: str, verdict: JudgeVerdict) -> None:
        name, raw = self.key("j", session), dump_verdict(verdict)
        self._background("save_verdict", lambda: self._client.set(name, raw, px=self.ttl_ms))

    def end_run(self, session: str) -> None:
        self._background("end_run", lambda: self._client.delete(*(self.key(kind, session) for kind in "vwj")))

    def _background(self, op: str, command: Callable[[], Awaitable[object]]) -> None:
        """A fire-and-forget write, off the request's path (``flush`` waits for them)."""
        if len(self._pending) >= self.max_pending_writes:  # Redis cannot keep up: shed, don't queue
            self.degradations += 1
            return
        task = asyncio.get_running_loop().create_task(self._run(op, command))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def response_chain(self, key: str) -> ChainRecord | None:
        record = await self._run("response_chain", lambda: self._load_chain(self.key("r", key)))
        return record if isinstance(record, ChainRecord) else None

    async def save_response_chain(self, key: str, record: ChainRecord) -> None:
        name, raw = self.key("r", key), record.dumps()
        await self._run("save_response_chain", lambda: self._client.set(name, raw, px=self.ttl_ms))

    async def add_event(self, entry: bytes, detail: bytes | None = None, keep: int = 1000) -> None:
        await self._events.add(entry, detail, keep)

    async def recent_events(self, count: int) -> list[LoggedEvent]:
        return await self._events.recent(count)

    async def event_detail(self, ref: str) -> bytes | None:
        return await self._events.detail(ref)

    async def flush(self) -> None:
        """Wait for the fire-and-forget writes in flight (each is bounded by op_timeout_s)."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=self.op_timeout_s * 2)

    async def ping(self) -> bool:
        try:
            async with asyncio.timeout(self.op_timeout_s):
                return bool(await self._client.ping())
        except Exception:  # noqa: BLE001 - any failure is "not answering"; cancellation propagates
            return False

    async def aclose(self) -> None:
        await self.flush()  # let in-flight writes land
        await self._client.aclose()
        await self._pool.aclose()

    # --- Redis commands -----------------------------------------------------------------------

    def key(self, kind: str, session: str) -> str:
        return f"{self.key_prefix}{kind}:{session}"

    async def _read(self, session: str, mark: HistoryMark | None) -> SessionState:
        keys = [self.key(kind, session) for kind in "vhcwj"]
        pipe = self._client.pipeline(transaction=False)  # one round trip
        pipe.lrange(keys[0], 0, -1)
        if mark is None:
            pipe.get(keys[1])
        else:  # swap: this request's mark in, the previous one out
            pipe.set(keys[1], mark.dumps(), px=self.ttl_ms, get=True)
            for key in (keys[0], keys[2], keys[3], keys[4]):  # the session is alive: keep what it has
                pipe.pexpire(key, self.ttl_ms)
        pipe.lrange(keys[3], 0, -1)
        pipe.get(keys[4])
        pipe.get(keys[2])
        raw_vetoes, raw_mark, *_, raw_warned, raw_verdict, raw_compacted = await pipe.execute()
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
        await self._append_once(keys=[self.key("v", session)],
                                args=[record.dumps(), record.identity, MAX_VETOES_PER_SESSION, self.ttl_ms])

    async def _push_warned(self, session: str, warned: WarnedCall) -> None:
        key = self.key("w", session)
        pipe = self._client.pipeline(transaction=False)
        pipe.rpush(key, dump_warned(warned))
        pipe.ltrim(key, -MAX_WARNED_PER_SESSION, -1)
        pipe.pexpire(key, self.ttl_ms)
        await pipe.execute()

    async def _load_chain(self, key: str) -> ChainRecord | None:
        raw = await self._client.get(key)
        return ChainRecord.loads(raw) if raw is not None else None

    async def _write_compacted(self, session: str, mark: HistoryMark | None) -> None:
        if mark is None:
            await self._client.delete(self.key("c", session))
        else:
            await self._client.set(self.key("c", session), mark.dumps(), px=self.ttl_ms)

    # --- degradation --------------------------------------------------------------------------

    async def _run(self, op: str, command: Callable[[], Awaitable[T]]) -> T | object:
        if time.monotonic() < self._down_until:
            self.degradations += 1
            return _FAILED
        try:
            async with asyncio.timeout(self.op_timeout_s):
                result = await command()
        except Exception as exc:  # noqa: BLE001 - any failure degrades; cancellation still propagates
            self._degraded(op, exc)
            return _FAILED
        if not self._healthy:
            self._healthy = True
            structlog.get_logger("loopguard").info("state_recovered", backend="redis", redis=self.where)
        return result

    def _degraded(self, op: str, exc: Exception) -> None:
        self.degradations += 1
        self._healthy = False
        self._down_until = time.monotonic() + self.retry_after_s
        detail = str(exc) or ("timed out" if isinstance(exc, TimeoutError) else "")
        if self._password:
            detail = detail.replace(self._password, "***")
        structlog.get_logger("loopguard").warning(
            "state_degraded", backend="redis", op=op, error=type(exc).__name__, detail=detail[:200],
            redis=self.where, retry_after_s=self.retry_after_s)


def redacted_url(url: str) -> str:
    """The URL without its password, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()
