"""Run an ASGI app on a free 127.0.0.1 port, in a thread with its own event loop, for a block.

``loopguard demo`` runs its scripted model and the gateway this way, and the tests run their
upstreams and gateways the same way (one helper, so both start servers alike).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def serve(app: Any, **options: Any) -> Iterator[str]:
    """Yields the base URL (``http://127.0.0.1:<port>``) once uvicorn has started; stops it
    when the block exits. ``options`` go to ``uvicorn.Config`` (e.g. the gateway's
    ``SERVER_OPTIONS``, or ``http="httptools"``: h11 otherwise)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, **{"log_level": "warning", "lifespan": "on", "http": "h11", "loop": "asyncio", **options}
    )
    server = uvicorn.Server(config)
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
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
