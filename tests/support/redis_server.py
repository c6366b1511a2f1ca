"""A real redis-server for tests: its own process on a free loopback port, no persistence.

CI installs redis-server (.ci/run); a machine without it fails the Redis tests loudly rather
than skipping them, so a green run always means the Redis backend was exercised.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis

from support.ports import free_port


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError(
            "redis-server is not on PATH: install it (apt-get install redis-server; "
            ".ci/run does) to run the Redis state tests"
        )
    return found


class RedisServer:
    """Start, stop and restart (same port, empty data) a redis-server."""

    def __init__(self, workdir: Path, password: str | None = None) -> None:
        self.binary = redis_binary()
        self.workdir = workdir
        self.password = password
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_timeout=5)

    def start(self) -> RedisServer:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.workdir),
            "--loglevel",
            "warning",
        ]
        if self.password:
            args += ["--requirepass", self.password]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                if self.client().ping():
                    return self
            except redis.RedisError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def pause(self) -> None:
        """A hung server: connections stay open, nothing answers (SIGSTOP)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        self.stop()
        self.start()
