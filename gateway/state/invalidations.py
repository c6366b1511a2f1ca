"""The one connection per process that hears from Redis which session keys changed.

Client-side caching in broadcast mode (Redis >= 6): the connection asks Redis to track the
mirror's key prefixes and to redirect the invalidation messages to itself, then subscribes to
them. RESP2 on purpose: there the messages arrive as ordinary pub/sub messages, which the
library's pub/sub reader hands over as they come. A lost connection empties the mirror and is
reopened after ``retry_after_s``; a Redis that refuses tracking (older than 6, or an ACL
without ``client``) leaves the mirror untrusted, and every request reads Redis as before.
"""

from __future__ import annotations

import asyncio

import structlog
from redis.asyncio import Connection, ConnectionPool

from gateway.state.mirror import Mirror

CHANNEL = "__redis__:invalidate"


async def listen(url: str, mirror: Mirror, *, retry_after_s: float, connect_timeout_s: float, where: str) -> None:
    """Run until cancelled, keeping ``mirror`` true (or untrusted while that cannot be)."""
    log = structlog.get_logger("loopguard")
    options = ConnectionPool.from_url(url, protocol=2, socket_connect_timeout=connect_timeout_s).connection_kwargs
    while True:
        connection = Connection(**options)
        try:
            await _follow(connection, mirror)
        except Exception as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # the library turns a cancelled read into a timeout
                raise asyncio.CancelledError from exc
            if mirror.trusted:
                log.warning("state_mirror_lost", backend="redis", redis=where, error=type(exc).__name__)
        finally:
            mirror.lost()
            await connection.disconnect(nowait=True)
        await asyncio.sleep(max(retry_after_s, 0.05))


async def _command(connection: Connection, *args: object) -> object:
    await connection.send_command(*args)
    return await connection.read_response()


async def _follow(connection: Connection, mirror: Mirror) -> None:
    await connection.connect()  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
    own_id = await _command(connection, "CLIENT", "ID")
    prefixes = [part for prefix in mirror.prefixes() for part in ("PREFIX", prefix)]
    await _command(connection, "CLIENT", "TRACKING", "ON", "REDIRECT", own_id, "BCAST", *prefixes)
    await _command(connection, "SUBSCRIBE", CHANNEL)
    mirror.subscribed()
    while True:  # each message: [b"message", channel, keys or None]
        kind, _, keys = await connection.read_response(disable_decoding=True, timeout=None)
        if kind == b"message":
            mirror.invalidated(keys)
