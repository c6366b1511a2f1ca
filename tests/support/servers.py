"""Real uvicorn servers on 127.0.0.1 for tests: each runs in its own thread and event loop."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def serve(app, *, http: str = "h11", **options) -> Iterator[str]:
    """Run ``app`` on a free loopback port until the block exits; yields its base URL.

    ``options`` go to ``uvicorn.Config`` (e.g. the gateway's own ``GATEWAY_UVICORN_OPTIONS``).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, **{"log_level": "warning", "lifespan": "on", "http": http, "loop": "asyncio", **options})
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
