"""The recent-events log on Redis: two streams, shared by every replica and worker.

``{prefix}ui:{events}:feed`` holds the entries (field ``e``) and the id of each one's detail (field ``r``,
empty when it has none) in ``{prefix}ui:{events}:detail`` (field ``d``). One script appends both, each
trimmed to the writer's ``keep`` with ``XADD MAXLEN``, so both streams stay bounded whatever the
traffic, in one round trip. ``{prefix}ui:revoked:<ref>`` marks a console sign-in ended by its
user, until its cookie would have expired. ``{prefix}ui:labels`` is a hash of the operators' run
labels (run -> entry), shared by every replica.

Nothing here is on a request's path: the console's sink writes from its own task and the console
reads when an operator looks. So these calls get a budget of their own (a second, not the
requests' ``op_timeout_s``) and a failure is logged and answered "nothing kept", without
marking Redis down for the traffic (the traffic's own operations decide that).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog

from gateway.state.base import MAX_LABELS
from gateway.state.events import LoggedEvent

T = TypeVar("T")
_STREAM_ID = re.compile(r"\d{1,20}-\d{1,20}")
BUDGET_S = 1.0
_APPEND = """
local ref = ''
if ARGV[2] ~= '' then
  ref = redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[3], '*', 'd', ARGV[2])
end
return redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '*', 'e', ARGV[1], 'r', ref)
"""


class RedisEventLog:
    def __init__(self, client: Any, key_prefix: str, where: str) -> None:
        self.client = client
        # One hash tag for both streams: the script appending to them stays in one cluster slot.
        self.feed, self.details = f"{key_prefix}ui:{{events}}:feed", f"{key_prefix}ui:{{events}}:detail"
        self.revocations = f"{key_prefix}ui:revoked:"
        self.labelled = f"{key_prefix}ui:labels"
        self.where = where  # the URL without its password, for the log
        self.failures = 0
        self._append = client.register_script(_APPEND)

    async def add(self, entry: bytes, detail: bytes | None, keep: int) -> None:
        await self._run(
            "add_event",
            lambda: self._append(keys=[self.feed, self.details], args=[entry, detail or b"", max(1, keep)]),
            None,
        )

    async def recent(self, count: int, after: str = "") -> list[LoggedEvent]:
        """Newest first; with ``after``, only the entries newer than it (``(`` makes the bound
        exclusive): Redis walks from the newest down to the cursor and no further."""
        low = f"({after}" if _STREAM_ID.fullmatch(after) else "-"
        rows: list[tuple[bytes, dict[bytes, bytes]]] = await self._run(
            "recent_events", lambda: self.client.xrevrange(self.feed, max="+", min=low, count=count), []
        )
        return [LoggedEvent(_text(key), fields.get(b"e", b""), _text(fields.get(b"r")) or None) for key, fields in rows]

    async def detail(self, ref: str) -> bytes | None:
        rows: list[tuple[bytes, dict[bytes, bytes]]] = await self._run(
            "event_detail", lambda: self.client.xrange(self.details, ref, ref, count=1), []
        )
        return rows[0][1].get(b"d") if rows else None

    async def revoke(self, ref: str, ttl_s: float) -> None:
        await self._run(
            "revoke_console_session", lambda: self.client.set(self.revocations + ref, b"1", px=_ms(ttl_s)), None
        )

    async def save_label(self, run: str, entry: bytes) -> None:
        """Operators label runs by hand: ``MAX_LABELS`` bounds a runaway script. A new run's label
        over it is refused and logged, never a silent drop of an older one."""
        full = await self._run("labels", lambda: self.client.hlen(self.labelled), 0) >= MAX_LABELS
        if full and not await self._run("labels", lambda: self.client.hexists(self.labelled, run), True):
            structlog.get_logger("loopguard").warning("console_labels_full", kept=MAX_LABELS, redis=self.where)
            return
        await self._run("save_label", lambda: self.client.hset(self.labelled, run, entry), None)

    async def labels(self) -> dict[str, bytes]:
        found: dict[bytes, bytes] = await self._run("labels", lambda: self.client.hgetall(self.labelled), {})
        return {_text(k): v for k, v in found.items()}

    async def revoked(self, ref: str) -> bool:
        """True when revoked, and when Redis cannot say: a sign-out must hold on every replica,
        so an unanswered check refuses the cookie (an operator's key in a header still works)."""
        found = await self._run("console_session_revoked", lambda: self.client.exists(self.revocations + ref), 1)
        return bool(found)

    async def _run(self, op: str, command: Callable[[], Awaitable[T]], failed: T) -> T:
        try:
            async with asyncio.timeout(BUDGET_S):
                return await command()
        except Exception as exc:
            self.failures += 1
            structlog.get_logger("loopguard").warning(
                "console_state_failed", op=op, error=type(exc).__name__, redis=self.where
            )
            return failed


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value
