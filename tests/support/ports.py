"""Loopback ports for tests that run side by side (pytest-xdist workers, or two checkouts' runs).

A port picked with ``bind(("127.0.0.1", 0))`` and closed again is free only for a moment: before the
child server binds it, the kernel may hand it to another worker's ``bind(0)`` or use it as the
local end of an outgoing connection. So a port a test hands to a child process comes from below
the kernel's ephemeral range (which ``bind(0)`` and ``connect`` draw from), and is claimed with a
lock file that this process holds until it exits, so no other test process on the machine takes it.

A port that must refuse connections is held bound and never listened on: the kernel answers a
connection there with a reset, and nobody else can bind it meanwhile.
"""

from __future__ import annotations

import fcntl
import random
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

LOWEST = 10_000
LOCKS = Path(tempfile.gettempdir()) / "loopguard-test-ports"
_claimed: list[IO[bytes]] = []  # held open for the process's life: the lock lasts as long


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default; macOS's range starts higher still


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _claim(port: int) -> bool:
    """Take ``port``'s lock file and keep it when the port is bindable now; False when another
    process holds the lock or something else has the port."""
    handle = open(LOCKS / str(port), "wb")  # noqa: SIM115 - kept open: the lock lives with it
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return False
    if not _bindable(port):
        handle.close()  # releases the lock
        return False
    _claimed.append(handle)
    return True


def free_port() -> int:
    """A loopback port no one listens on, that the kernel will not give away and no other test
    process will pick, for a child server to bind."""
    top = _ephemeral_start()
    if top - LOWEST < 1_000:  # an unusual range: fall back to the kernel's choice
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    LOCKS.mkdir(exist_ok=True)
    span = top - LOWEST
    start = random.SystemRandom().randrange(span)  # processes starting together begin apart
    for offset in range(span):
        port = LOWEST + (start + offset) % span
        if _claim(port):
            return port
    raise RuntimeError(f"no free loopback port in {LOWEST}-{top}")


@contextmanager
def refused_port() -> Iterator[int]:
    """A port bound but never listened on, for the block: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
