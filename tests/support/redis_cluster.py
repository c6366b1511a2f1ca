"""Real Redis Cluster and Sentinel sets for tests, each process on its own free loopback port.

``RedisCluster``: 3 primaries and 3 replicas (``redis-cli --cluster create --cluster-replicas
1``), ready once every node reports ``cluster_state:ok``. ``SentinelSet``: a primary, one
replica and 3 sentinels watching them, with short down-after and failover times so a killed
primary is replaced within seconds. Both can kill a primary and wait for its replacement.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import redis

from support.ports import free_port
from support.redis_server import redis_binary

SENTINEL_SERVICE = "loopguard"


def cluster_tools() -> str | None:
    """Why a cluster cannot be started here (None: it can)."""
    missing = [name for name in ("redis-server", "redis-cli") if shutil.which(name) is None]
    return f"{' and '.join(missing)} not on PATH" if missing else None


def _until(check: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if check():
                return
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _synced(node: Node) -> bool:
    replication = node.client().info("replication")
    return replication["role"] == "master" or replication.get("master_link_status") == "up"


class Node:
    """One redis-server process (a cluster node, a data node or a sentinel)."""

    def __init__(self, workdir: Path, args: list[str], config: str = "") -> None:
        self.port = free_port()
        self.workdir = workdir / str(self.port)
        self.workdir.mkdir(parents=True)
        self.args, self.config = args, config
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Node:
        command = [redis_binary()]
        if self.config:
            path = self.workdir / "node.conf"
            path.write_text(self.config.format(port=self.port, dir=self.workdir))
            command.append(str(path))
        command += ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir), *self.args]
        command += ["--save", "", "--appendonly", "no", "--loglevel", "warning"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _until(lambda: bool(self.client().ping()), f"redis on port {self.port}", 10)
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


class RedisCluster:
    def __init__(self, workdir: Path) -> None:
        # The bus port is a free port of its own (the default, port + 10000, may be taken).
        options = ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000", "--cluster-config-file", "nodes.conf"]
        options += ["--cluster-replica-validity-factor", "0"]  # a replica always takes over
        self.nodes = [Node(workdir, [*options, "--cluster-port", str(free_port())]) for _ in range(6)]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def start(self) -> RedisCluster:
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> RedisCluster:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", "1", "--cluster-yes"],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=60,
        )
        self.wait_ok()
        return self

    def alive(self) -> list[Node]:
        return [node for node in self.nodes if node.process is not None and node.process.poll() is None]

    def wait_ok(self) -> None:
        """Every live node sees the cluster ok, and every replica has synced."""
        for node in self.alive():
            _until(lambda node=node: _synced(node), "replication")
        for node in self.alive():
            _until(
                lambda node=node: node.client().execute_command("CLUSTER INFO")["cluster_state"] == "ok", "cluster ok"
            )

    def primaries(self) -> list[Node]:
        """Live nodes that serve slots, by port."""
        return [node for node in self.alive() if node.client().execute_command("ROLE")[0] == b"master"]

    def primary_of(self, key: str) -> Node:
        slot = self.alive()[0].client().cluster("KEYSLOT", key)
        for node in self.primaries():
            for start, end, owner, *_ in node.client().execute_command("CLUSTER SLOTS"):
                if start <= slot <= end and owner[1] == node.port:
                    return node
        raise RuntimeError(f"no primary serves slot {slot}")

    def kill_primary(self, node: Node) -> None:
        """Kill ``node`` and wait until its replica serves its slots and the cluster is ok again."""
        before = len(self.primaries())
        node.kill()
        _until(lambda: len(self.primaries()) == before, "a replica's promotion")
        self.wait_ok()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


SENTINEL_CONFIG = """port {port}
dir {dir}
sentinel monitor loopguard 127.0.0.1 PRIMARY 2
sentinel down-after-milliseconds loopguard 500
sentinel failover-timeout loopguard 2000
sentinel parallel-syncs loopguard 1
"""


class SentinelSet:
    def __init__(self, workdir: Path) -> None:
        self.primary = Node(workdir, [])
        self.replica = Node(workdir, [])
        self.workdir = workdir
        self.sentinels: list[Node] = []

    @property
    def addresses(self) -> list[str]:
        return [f"127.0.0.1:{node.port}" for node in self.sentinels]

    def start(self) -> SentinelSet:
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> SentinelSet:
        self.primary.start()
        self.replica.args = ["--replicaof", "127.0.0.1", str(self.primary.port)]
        self.replica.start()
        _until(lambda: self.primary.client().info("replication")["connected_slaves"] == 1, "replication")
        config = SENTINEL_CONFIG.replace("PRIMARY", str(self.primary.port))
        self.sentinels = [Node(self.workdir, ["--sentinel"], config).start() for _ in range(3)]
        _until(lambda: all(self._sees_all(node) for node in self.sentinels), "sentinels to find each other")
        return self

    def _sees_all(self, sentinel: Node) -> bool:
        state = sentinel.client().sentinel_master(SENTINEL_SERVICE)
        return int(state["num-other-sentinels"]) == 2 and int(state["num-slaves"]) == 1

    def master_port(self) -> int:
        _, port = self.sentinels[0].client().sentinel_get_master_addr_by_name(SENTINEL_SERVICE)
        return int(port)

    def kill_primary(self) -> None:
        """Kill the primary and wait until the sentinels promoted the replica."""
        self.primary.kill()
        self.failed_over()

    def failed_over(self) -> None:
        """Wait until the sentinels name the replica as the primary (the primary was killed) and
        it accepts writes; then the replica is the primary and the killed node the replica."""
        _until(lambda: self.master_port() == self.replica.port, "the sentinels' failover")
        _until(lambda: self.replica.client().execute_command("ROLE")[0] == b"master", "the replica's promotion")
        self.primary, self.replica = self.replica, self.primary

    def rejoin(self, node: Node) -> None:
        """Start the killed ``node`` again, as the new primary's replica, and wait until synced."""
        node.args = ["--replicaof", "127.0.0.1", str(self.primary.port)]
        node.start()
        _until(lambda: _synced(node), "the rejoined replica's sync")

    def stop(self) -> None:
        for node in [*self.sentinels, self.primary, self.replica]:
            node.stop()
