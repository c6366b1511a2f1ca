"""Stopping a sink's worker task: let it drain what is queued (for at most ``drain_s``), then
cancel it. Shared by the sinks that deliver off the request path (webhook, console)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def drain_then_cancel(task: asyncio.Task[Any], queue: asyncio.Queue[Any], drain_s: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(queue.join(), drain_s)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
