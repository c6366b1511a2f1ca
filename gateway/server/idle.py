"""Memory given back when traffic goes away.

The caches that make a conversation's next request cheap (its last body, its parsed history,
the per-text memos) are bounded in bytes, but a bounded cache stays full after a burst for as
long as the process lives. Once no request has started for ``state.ttl_s`` (at most a minute),
the conversations they describe are as good as idle: the caches are emptied, the garbage
collected and, with glibc, the freed heap returned to the system (``malloc_trim``), so the
process's RSS falls back towards where it started. The next request of a conversation simply
parses it whole once.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from typing import Any

from gateway.trace import memo

MAX_IDLE_S = 60.0


async def give_back_when_idle(gateway: Any, front: Any, idle_s: float) -> None:
    idle_s = min(idle_s, MAX_IDLE_S)
    seen, released = -1, True
    while True:
        await asyncio.sleep(idle_s)
        if front.started != seen:
            seen, released = front.started, False
            continue
        if released or front.inflight.used:
            continue
        gateway.history.clear()
        gateway.bodies.clear()
        memo.clear_all()
        gc.collect()
        _trim()
        released = True


def _trim() -> None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim(0)
    except (OSError, AttributeError, TypeError):  # not glibc: the allocator keeps its pages
        pass
