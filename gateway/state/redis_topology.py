"""How the store reaches Redis: one node, a Redis Cluster, or a Sentinel-watched primary.

Each topology gives the store its client (redis-py's own: ``Redis``, ``RedisCluster``, or the
Sentinel client's ``master_for``, which follow slot moves and failovers by themselves) and gives
the invalidation listener (``gateway.state.invalidations``) the primaries to follow: client
tracking is per node, so the listener holds one connection per primary, and re-reads the
primaries every ``WATCH_EVERY_S`` where they can change (cluster, Sentinel).

The URL's credentials, database and scheme (``rediss://``: TLS) apply to every data node; in
cluster mode its host list (``redis://h1:6379,h2:6379``) names seed nodes, any of which lets
the client find the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff, NoBackoff

Mode = Literal["single", "cluster", "sentinel"]
Address = tuple[str, int]
WATCH_EVERY_S = 1.0  # how soon a new primary (failover, resharding) is followed
COMMANDS_PER_OPERATION = 4  # the most commands one store operation has in flight on one node


@dataclass(frozen=True)
class Target:
    mode: Mode
    url: str
    sentinels: tuple[Address, ...] = ()
    service: str = ""
    max_connections: int = 64
    timeout_s: float = 0.5  # connect and socket timeout of every connection


def seeds(url: str) -> list[Address]:
    """The nodes a URL names: ``redis://[auth@]h1:p1,h2:p2/db``."""
    return [address(part) for part in urlsplit(url).netloc.rpartition("@")[2].split(",")]


def address(part: str) -> Address:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    if part.startswith("["):
        host, _, rest = part[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = part.partition(":")
    return host, int(port or 6379)


def first_seed_url(url: str) -> str:
    """The URL with its host list cut to the first node (what redis-py's URL parser reads).

    The rest of the URL is kept as written: a URL with no host (``redis:///0``,
    ``redis://:pw@/0``, where Sentinel names the primary) keeps its ``//``, which the standard
    library's ``geturl()`` drops for schemes it does not know, and redis-py needs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    auth, at, hosts = rest[:end].rpartition("@")
    return f"{scheme}://{auth}{at}{hosts.split(',')[0]}{rest[end:]}"


class Topology:
    """One node: the URL's."""

    watched = False  # the primaries never change

    def __init__(self, target: Target) -> None:
        self.target = target
        self._pool: BlockingConnectionPool | None = None
        self._options = ConnectionPool.from_url(
            first_seed_url(target.url), protocol=2, socket_connect_timeout=target.timeout_s
        )

    def client(self) -> Any:
        # One immediate retry: a pooled connection to a server that has since restarted fails
        # once, and the retry on a fresh connection succeeds within the same operation.
        pool = BlockingConnectionPool.from_url(
            self.target.url,
            max_connections=self.target.max_connections,
            timeout=None,
            retry=Retry(NoBackoff(), 1),
            socket_connect_timeout=self.target.timeout_s,
            socket_timeout=self.target.timeout_s,
        )
        self._pool = pool
        return Redis(connection_pool=pool)

    def gate(self) -> AbstractAsyncContextManager[object]:
        """Entered by each operation: a single node's pool already makes operations wait for a
        free connection."""
        return contextlib.nullcontext()

    async def aclose(self) -> None:
        """Close what the client does not close itself (after the client)."""
        if self._pool is not None:
            await self._pool.aclose()

    async def primaries(self) -> tuple[Address, ...]:
        return (("", 0),)  # the URL's node, whatever it is (a host, a unix socket)

    def connection(self, address: Address) -> AbstractConnection:
        """A listener's connection (RESP2) to ``address``, not connected yet."""
        options = dict(self._options.connection_kwargs)
        if address != ("", 0):
            options.update(host=address[0], port=address[1])
        return self._options.connection_class(**options)


class ClusterTopology(Topology):
    """The cluster client refuses a command (instead of waiting) when a node's connections are
    all busy; so at most ``max_connections`` operations run at once (the others wait, within
    their timeout), each with at most ``COMMANDS_PER_OPERATION`` commands in flight on a node."""

    watched = True
    _gate: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def gate(self) -> AbstractAsyncContextManager[object]:
        loop = asyncio.get_running_loop()
        if self._gate is None or self._gate[0] is not loop:
            self._gate = (loop, asyncio.Semaphore(self.target.max_connections))
        return self._gate[1]

    def client(self) -> Any:
        options = self._options.connection_kwargs
        return RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in seeds(self.target.url)],
            # the console's event log runs beside the operations: a margin for it
            max_connections=self.target.max_connections * COMMANDS_PER_OPERATION + 16,
            # A connection error makes the cluster client re-read the slots and drop the nodes'
            # connections, which commands in flight on them then see too: each gets a few retries
            # a few milliseconds apart, not one at once, before the store counts a fault.
            retry=Retry(ExponentialBackoff(cap=0.1, base=0.005), 3),
            username=options.get("username"),
            password=options.get("password"),
            ssl=urlsplit(self.target.url).scheme == "rediss",
            socket_connect_timeout=self.target.timeout_s,
            socket_timeout=self.target.timeout_s,
        )

    async def primaries(self) -> tuple[Address, ...]:
        """The nodes serving slots, from the first seed or known primary that answers
        ``CLUSTER SLOTS`` (an empty host in its answer is the host asked)."""
        failure: Exception | None = None
        for host, port in dict.fromkeys([*self._known, *seeds(self.target.url)]):
            connection = self.connection((host, port))
            try:
                await connection.connect()  # type: ignore[no-untyped-call]  # unannotated upstream
                await connection.send_command("CLUSTER", "SLOTS")
                slots = await connection.read_response()
            except Exception as exc:
                failure = exc
                continue
            finally:
                await connection.disconnect(nowait=True)
            found = {((owner[0].decode() or host), int(owner[1])) for _, _, owner, *_ in slots}
            self._known = tuple(sorted(found))
            return self._known
        raise ConnectionError(f"no cluster node answered: {failure}")

    _known: tuple[Address, ...] = ()


class SentinelTopology(Topology):
    watched = True

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        options = {k: v for k, v in self._options.connection_kwargs.items() if k not in ("host", "port", "protocol")}
        if urlsplit(target.url).scheme == "rediss":
            options["ssl"] = True
        self._sentinel = Sentinel(  # type: ignore[no-untyped-call, unused-ignore]  # unannotated before redis-py 8
            list(target.sentinels),
            sentinel_kwargs={"socket_timeout": target.timeout_s, "socket_connect_timeout": target.timeout_s},
            **{**options, "socket_timeout": target.timeout_s},
        )

    def client(self) -> Any:
        return self._sentinel.master_for(
            self.target.service, max_connections=self.target.max_connections, retry=Retry(NoBackoff(), 1)
        )

    async def aclose(self) -> None:
        for sentinel in self._sentinel.sentinels:
            await sentinel.aclose()

    async def primaries(self) -> tuple[Address, ...]:
        host, port = await self._sentinel.discover_master(self.target.service)
        return ((str(host), int(port)),)


def topology(target: Target) -> Topology:
    kinds: dict[Mode, type[Topology]] = {
        "single": Topology,
        "cluster": ClusterTopology,
        "sentinel": SentinelTopology,
    }
    return kinds[target.mode](target)
