"""Run an ASGI app on a free 127.0.0.1 port, in a thread with its own event loop, for a block.

``loopguard demo`` runs its scripted model and the gateway this way, and the tests run their
upstreams and gateways the same way (one helper, so both start servers alike).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


class _LoopbackServer(uvicorn.Server):
    """uvicorn's server, woken at once when told to stop: uvicorn looks at ``should_exit`` every
    0.1 s, and a program that starts and stops servers by the hundred (the tests) waited that
    out on every stop."""

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        while not await self.on_tick(counter):  # uvicorn's ticks: the date header, request limits
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)

    def stop(self) -> None:
        self.should_exit = True
        if self._loop is not None and self._wake is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: it stopped already
                self._loop.call_soon_threadsafe(self._wake.set)


@contextmanager
def serve(app: Any, **options: Any) -> Iterator[str]:
    """Yields the base URL (``http://127.0.0.1:<port>``) once uvicorn has started; stops it
    when the block exits. ``options`` go to ``uvicorn.Config`` (e.g. the gateway's
    ``SERVER_OPTIONS``). HTTP is parsed by httptools, as ``loopguard serve`` parses it (a
    dependency, and a fraction of h11's CPU per request), unless ``http`` names another."""
    # TCP spelt out, or asyncio leaves Nagle's algorithm on for its connections (see
    # gateway/serving.py's ``bound``): a reply in two writes waited ~40 ms for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, **{"log_level": "warning", "lifespan": "on", "http": "httptools", "loop": "asyncio", **options}
    )
    server = _LoopbackServer(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("loopback server did not start")
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        thread.join(timeout=10)
        sock.close()
