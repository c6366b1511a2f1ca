"""How uvicorn runs the gateway: its options, the garbage collector's settings, and
``server.workers`` processes serving one port.

On Linux each worker listens on a socket of its own bound to the same address (SO_REUSEPORT), and
the kernel spreads new connections evenly over them. With one socket shared by all workers, the
worker that woke first accepted a whole burst of connections: keep-alive clients (an agent
fleet's pooled connections, a load balancer's few) then stayed on it, and in half the runs of 32
connections on two workers every one of them went to the same worker, which served no more than
one worker alone. Elsewhere the workers share the parent's socket.

Each worker is a whole gateway: its own event loop, upstream pool, policy watcher and, with the
memory state backend, its own sessions; its counters are kept in files shared with the others, so
that any worker's /metrics counts them all. A conversation's requests can land on any worker, so
across workers sessions are only shared through the redis backend.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import structlog

from gateway.config import Config
from gateway.metrics.registry import SHARED_DIR_ENV

# Read by each worker process to rebuild the same gateway the parent validated.
CONFIG_ENV = "LOOPGUARD_CONFIG"
# A young-generation collection every 20,000 net allocations instead of 700. Parsing one agent
# history makes hundreds of containers, so the default ran a collection every few requests and
# a full one over the whole heap (history caches, policies, modules) every few hundred: about
# 0.2 ms a request, a sixth of the gateway's CPU, measured with gc.callbacks under
# benchmarks/overhead.py. Cyclic garbage still goes, in larger, rarer batches.
GC_THRESHOLDS = (20_000, 50, 100)


def uvicorn_options(host: str, port: int, limits: Any = None, server: Any = None) -> dict[str, Any]:
    """``limits``: the config's, for the header timeout and the connection cap (uvicorn's own
    protocol, "auto", has neither). ``server``: the config's, for the proxies trusted."""
    from gateway.server.app import SERVER_OPTIONS
    from gateway.server.connections import configure

    return {
        "host": host,
        "port": port,
        "log_level": "warning",  # one structured line per request comes from the gateway itself
        "access_log": False,
        "loop": "auto",  # uvloop and httptools when installed
        "http": configure(limits.header_timeout_s, limits.max_connections) if limits is not None else "auto",
        **SERVER_OPTIONS,
        **(proxy_options(server.forwarded_allow_ips) if server is not None else {}),
    }


def proxy_options(trusted: tuple[str, ...]) -> dict[str, Any]:
    """uvicorn believes ``X-Forwarded-Proto`` / ``-For`` from these peers only (``server.
    forwarded_allow_ips``): the scheme a request was made in, and so the console cookie's
    ``Secure`` flag, follows a trusted TLS proxy and nobody else. Passed explicitly, so uvicorn's
    ``FORWARDED_ALLOW_IPS`` environment variable never decides instead of the config."""
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": ",".join(trusted) or "127.0.0.1"}


def tune_gc() -> None:
    """Once the app is built: what exists now lives as long as the process, so the collector
    stops traversing it (``gc.freeze``), and young collections run less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def serve_workers(
    app: Any,
    config: Config,
    config_path: str | None,
    workers: int,
    announce: Callable[[Any, Config, tuple[Any, ...]], None],
    options: dict[str, Any],
) -> int:
    """Run ``workers`` processes, each building its gateway with :func:`worker_app`. ``app`` is
    the parent's, built only to refuse a bad policy before any worker starts and to announce."""
    if config.state.backend == "memory":
        structlog.get_logger("loopguard").warning(
            "memory_state_with_workers",
            workers=workers,
            detail="each worker keeps its own sessions, so a conversation's requests may be judged "
            "without its history; set state.backend: redis to share them across workers",
        )
    if config_path:
        os.environ[CONFIG_ENV] = os.path.abspath(config_path)  # workers may not share our cwd
    else:
        os.environ.pop(CONFIG_ENV, None)
    with shared_metrics():
        return _supervise(app, config, workers, announce, options)


@contextlib.contextmanager
def shared_metrics() -> Iterator[None]:
    """The workers' counters in one directory, so a scrape counts all of them (a directory the
    operator gave is used as it is and kept; ours goes when the parent stops)."""
    if os.environ.get(SHARED_DIR_ENV):
        yield
        return
    os.environ[SHARED_DIR_ENV] = tempfile.mkdtemp(prefix="loopguard-metrics-")
    try:
        yield
    finally:
        shutil.rmtree(os.environ.pop(SHARED_DIR_ENV), ignore_errors=True)


def _supervise(
    app: Any,
    config: Config,
    workers: int,
    announce: Callable[[Any, Config, tuple[Any, ...]], None],
    options: dict[str, Any],
) -> int:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    server = uvicorn.Config("gateway.serving:worker_app", factory=True, workers=workers, **options)
    if sys.platform.startswith("linux"):
        try:
            sock = reserve(options["host"], options["port"])
        except OSError as exc:  # taken, or no such address: as uvicorn, say so and stop
            print(f"loopguard: cannot serve {options['host']}:{options['port']}: {exc}", file=sys.stderr)
            return 1
        sockets: list[Any] = [OwnSocket(sock.family, sock.getsockname())]
    else:
        sock = server.bind_socket()  # listening: connections queue until a worker accepts them
        sockets = [sock]
    announce(app, config, sock.getsockname())
    # Older uvicorn releases (pyproject allows them) take the workers' entry point; newer ones
    # build each worker's Server themselves.
    takes_target = "target" in inspect.signature(Multiprocess).parameters
    target = {"target": uvicorn.Server(server).run} if takes_target else {}
    with sock, contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: Ctrl-C is a normal stop
        Multiprocess(server, sockets=sockets, **target).run()
    return 0


def reserve(host: str, port: int) -> socket.socket:
    """The port the workers will share, bound in the parent and never listened on (so it gets no
    connections): a port someone else holds is refused here, port 0 becomes a real one, and the
    port stays ours while workers come and go."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:  # without SO_REUSEPORT: refused if anything holds it
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        address = probe.getsockname()
    return bound(family, address)


def bound(family: int, address: tuple[Any, ...]) -> socket.socket:
    # IPPROTO_TCP spelt out: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # connections whose socket says TCP, and an accepted one inherits proto 0 from socket(family).
    # With Nagle on, a reply written in two pieces (its head, then its body; each event of a
    # stream) waited for the client's delayed ACK: ~40 ms on a kept-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(address)
    return sock


class OwnSocket:
    """What the supervisor hands each worker in place of a socket: unpickled in the worker
    process, it is a new socket of that worker's own bound to the shared address (uvicorn then
    listens on it). A restarted worker gets a new one; a dead worker's socket closes with it, and
    the kernel stops handing it connections."""

    def __init__(self, family: int, address: tuple[Any, ...]) -> None:
        self.family, self.address = family, address

    def __reduce__(self) -> tuple[Any, ...]:
        return bound, (self.family, self.address)


def worker_app() -> Any:
    """The uvicorn factory each worker process calls: the gateway of the parent's config."""
    from gateway.config import load_config
    from gateway.logging import configure_logging
    from gateway.server.app import build_app
    from gateway.server.connections import configure as configure_connections

    config = load_config(os.environ.get(CONFIG_ENV))
    configure_logging(config.logging.format, config.logging.level)
    configure_connections(config.limits.header_timeout_s, config.limits.max_connections)
    app = build_app(config)
    tune_gc()
    return app
