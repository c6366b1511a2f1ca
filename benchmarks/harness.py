"""What the benchmarks share: child processes on free loopback ports, and percentiles."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> Callable[[], bool]:
    """Ready once ``url`` answers at all."""

    def check() -> bool:
        try:
            httpx.get(url, timeout=1)
            return True
        except httpx.HTTPError:
            return False

    return check


@contextmanager
def process(
    command: list[str],
    ready: Callable[[], bool],
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    stderr: Path | None = None,
) -> Iterator[subprocess.Popen]:
    """Run ``command`` in ``cwd`` until the block exits; wait (30 s at most) until ``ready()``.
    Its standard error (where the gateway logs) goes to ``stderr`` when given, else nowhere."""
    err = stderr.open("wb") if stderr is not None else subprocess.DEVNULL
    child = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while not ready():
            if child.poll() is not None:
                raise RuntimeError(f"{command[:4]} exited with {child.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[:4]} did not start")
            time.sleep(0.05)
        yield child
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
        if stderr is not None:
            err.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live descendants (worker processes)."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(stat[11]) + int(stat[12])) / _TICK
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        try:
            total += cpu_seconds(int(child))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


_TICK = os.sysconf("SC_CLK_TCK")


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores: what any process,
    ours or not, left idle between two readings shows whether more workers could have helped."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])
    return (total - idle) / _TICK, total / _TICK


def redis_answers(port: int) -> Callable[[], bool]:
    """Ready once a redis-server on ``port`` answers PING."""

    def check() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    return check


@contextmanager
def clients(urls: dict[str, str]) -> Iterator[dict[str, httpx.Client]]:
    """One keep-alive client per target, by name; all closed when the block exits."""
    pool = {name: httpx.Client(base_url=url, timeout=60) for name, url in urls.items()}
    try:
        yield pool
    finally:
        for client in pool.values():
            client.close()


def interleaved(names: Sequence[str], rounds: int) -> Iterator[tuple[int, str]]:
    """(round, target) for every target in every round, the starting target rotating each round:
    a burst of someone else's load lands on all targets alike, not on all samples of one."""
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in [*names[shift:], *names[:shift]]:
            yield round_, name


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: an observed value, no interpolation."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]
