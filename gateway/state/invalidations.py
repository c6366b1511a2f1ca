"""The connections per process that hear from Redis which session keys changed.

Client-side caching in broadcast mode (Redis >= 6): each connection asks its node to track the
mirror's key prefixes and to redirect the invalidation messages to itself, then subscribes to
them. RESP2 on purpose: there the messages arrive as ordinary pub/sub messages, which the
library's pub/sub reader hands over as they come.

Tracking is per node, so there is one connection per primary (``gateway.state.redis_topology``:
one for a single node or a Sentinel-watched primary, one per primary of a cluster), and the
mirror is trusted only once all of them are subscribed. Where the primaries can change (a
failover, a slot moved to another node) they are read again every ``WATCH_EVERY_S``; a change,
like any lost connection, empties the mirror (invalidations may have been missed) and the
connections are opened again, to the new primaries, after ``retry_after_s``. A Redis that
refuses tracking (older than 6, or an ACL without ``client``) leaves the mirror untrusted, and
every request reads Redis as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from functools import partial

import structlog
from redis.asyncio.connection import AbstractConnection

from gateway.state.mirror import Mirror
from gateway.state.redis_topology import WATCH_EVERY_S, Address, Topology

CHANNEL = "__redis__:invalidate"


class TopologyChanged(Exception):
    """The primaries are not the ones followed any more."""


async def listen(topology: Topology, mirror: Mirror, *, retry_after_s: float, where: str) -> None:
    """Run until cancelled, keeping ``mirror`` true (or untrusted while that cannot be)."""
    log = structlog.get_logger("loopguard")
    while True:
        try:
            await _follow_all(topology, mirror)
        except Exception as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # the library turns a cancelled read into a timeout
                raise asyncio.CancelledError from exc
            if mirror.trusted:
                log.warning("state_mirror_lost", backend="redis", redis=where, error=type(exc).__name__)
        finally:
            mirror.lost()
        await asyncio.sleep(max(retry_after_s, 0.05))


async def _follow_all(topology: Topology, mirror: Mirror) -> None:
    """Follow every primary until one connection fails or the primaries change."""
    primaries = await topology.primaries()
    waiting = set(primaries)

    def ready(address: Address) -> None:
        waiting.discard(address)
        if not waiting:
            mirror.subscribed()

    connections = [topology.connection(address) for address in primaries]
    tasks = [asyncio.ensure_future(_follow(c, mirror, partial(ready, a))) for c, a in zip(connections, primaries)]
    if topology.watched:
        tasks.append(asyncio.ensure_future(_watch(topology, primaries)))
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # the first failure, raised here
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        for connection in connections:
            await connection.disconnect(nowait=True)


async def _watch(topology: Topology, followed: tuple[Address, ...]) -> None:
    while True:
        await asyncio.sleep(WATCH_EVERY_S)
        if await topology.primaries() != followed:
            raise TopologyChanged


async def _command(connection: AbstractConnection, *args: object) -> object:
    await connection.send_command(*args)
    return await connection.read_response()


async def _follow(connection: AbstractConnection, mirror: Mirror, ready: Callable[[], None]) -> None:
    await connection.connect()  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
    own_id = await _command(connection, "CLIENT", "ID")
    prefixes = [part for prefix in mirror.prefixes() for part in ("PREFIX", prefix)]
    await _command(connection, "CLIENT", "TRACKING", "ON", "REDIRECT", own_id, "BCAST", *prefixes)
    await _command(connection, "SUBSCRIBE", CHANNEL)
    ready()
    while True:  # each message: [b"message", channel, keys or None]
        kind, _, keys = await connection.read_response(disable_decoding=True, timeout=None)
        if kind == b"message":
            mirror.invalidated(keys)
