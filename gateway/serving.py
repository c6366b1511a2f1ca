"""How uvicorn runs the gateway: its options, the garbage collector's settings, and
``server.workers`` processes sharing one listening socket (the parent binds it, the kernel hands
each connection to one of the workers).

Each worker is a whole gateway: its own event loop, upstream pool, policy watcher and, with the
memory state backend, its own sessions. A conversation's requests can land on any worker, so
across workers sessions are only shared through the redis backend.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from typing import Any

import structlog

from gateway.config import Config

# Read by each worker process to rebuild the same gateway the parent validated.
CONFIG_ENV = "LOOPGUARD_CONFIG"
# A young-generation collection every 20,000 net allocations instead of 700. Parsing one agent
# history makes hundreds of containers, so the default ran a collection every few requests and
# a full one over the whole heap (history caches, policies, modules) every few hundred: about
# 0.2 ms a request, a sixth of the gateway's CPU, measured with gc.callbacks under
# benchmarks/overhead.py. Cyclic garbage still goes, in larger, rarer batches.
GC_THRESHOLDS = (20_000, 50, 100)


def uvicorn_options(host: str, port: int) -> dict[str, Any]:
    from gateway.server.app import SERVER_OPTIONS

    return {
        "host": host,
        "port": port,
        "log_level": "warning",  # one structured line per request comes from the gateway itself
        "access_log": False,
        "loop": "auto",  # uvloop and httptools when installed
        "http": "auto",
        **SERVER_OPTIONS,
    }


def tune_gc() -> None:
    """Once the app is built: what exists now lives as long as the process, so the collector
    stops traversing it (``gc.freeze``), and young collections run less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def serve_workers(app: Any, config: Config, config_path: str | None, workers: int,
                  announce: Callable[[Any, Config, tuple[Any, ...]], None], options: dict[str, Any]) -> None:
    """Run ``workers`` processes, each building its gateway with :func:`worker_app`. ``app`` is
    the parent's, built only to refuse a bad policy before any worker starts and to announce."""
    import contextlib

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    if config.state.backend == "memory":
        structlog.get_logger("loopguard").warning(
            "memory_state_with_workers", workers=workers,
            detail="each worker keeps its own sessions, so a conversation's requests may be judged "
                   "without its history; set state.backend: redis to share them across workers")
    if config_path:
        os.environ[CONFIG_ENV] = os.path.abspath(config_path)  # workers may not share our cwd
    else:
        os.environ.pop(CONFIG_ENV, None)
    server = uvicorn.Config("gateway.serving:worker_app", factory=True, workers=workers, **options)
    sock = server.bind_socket()  # listening: connections queue until a worker accepts them
    announce(app, config, sock.getsockname())
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: Ctrl-C is a normal stop
        Multiprocess(server, sockets=[sock]).run()


def worker_app() -> Any:
    """The uvicorn factory each worker process calls: the gateway of the parent's config."""
    from gateway.config import load_config
    from gateway.logging import configure_logging
    from gateway.server.app import build_app

    config = load_config(os.environ.get(CONFIG_ENV))
    configure_logging(config.logging.format, config.logging.level)
    app = build_app(config)
    tune_gc()
    return app
