"""`loopguard serve --workers N`: real worker processes sharing one port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.process import child_env, free_port, gateway_process


def _workers(parent: int) -> list[int]:
    """The parent's worker processes (multiprocessing's resource tracker is no worker)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return [int(pid) for pid in children if _is_worker(int(pid))]


def _is_worker(pid: int) -> bool:
    try:  # a child may exit (or still be exec'ing) between the listing and this read
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"spawn_main" in cmdline and b"resource_tracker" not in cmdline


def _sockets(port: int, state: str) -> set[str]:
    """Inodes of the TCP sockets on local ``port`` in ``state`` (/proc/net/tcp: 01 established,
    0A listening)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
            inodes.add(fields[9])
    return inodes


def _owned(pid: int, inodes: set[str]) -> int:
    """How many of these sockets process ``pid`` holds."""
    return sum(link.startswith("socket:[") and link[8:-1] in inodes for link in _links(pid))


def _links(pid: int) -> list[str]:
    """What the process's descriptors point to; one closed between the listing and its read
    (the process keeps working meanwhile) is skipped, not an error."""
    links = []
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return []  # the process has exited
    for fd in fds:
        try:
            links.append(os.readlink(fd))
        except OSError:
            continue
    return links


def _listening(parent: int, port: int) -> list[int]:
    """The parent's two workers once each listens on ``port``. uvicorn's supervisor replaces a
    worker that misses its liveness ping (a loaded machine), so they are read afresh each time."""

    def both() -> list[int]:
        workers = _workers(parent)
        listening = _sockets(port, "0A")
        return workers if len(workers) == 2 and all(_owned(pid, listening) for pid in workers) else []

    return _until(both)


def _until(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (found := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def _served(url: str, route: str) -> float:
    """The requests to ``route`` answered 200, as one scrape of /metrics counts them."""
    text = httpx.get(url + "/metrics", headers={"connection": "close"}).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "loopguard_requests_total" and sample.labels == {"route": route, "status": "200"}:
                return sample.value
    return 0.0


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(pair.decode().split("=", 1) for pair in pairs if b"=" in pair)


def _two_workers(tmp_path, upstream, port: int, **env: str):
    """The gateway with ``server.workers: 2`` in its config."""
    config = tmp_path / "gw.yaml"
    config.write_text(f"upstream:\n  base_url: {upstream.url}/v1\nserver:\n  workers: 2\n")
    return gateway_process(
        ["serve", "--config", str(config), "--port", str(port)], port, tmp_path / "stderr.log", env=child_env(**env)
    )


def test_two_workers_serve_one_port_and_a_scrape_counts_both(tmp_path, upstream):
    port = free_port()
    with _two_workers(tmp_path, upstream, port) as gw:
        workers = _listening(gw.process.pid, port)
        assert len(workers) == 2
        shared = Path(_environ(workers[0])["PROMETHEUS_MULTIPROC_DIR"])
        # A connection per request, so the kernel spreads them over both workers.
        client = openai.OpenAI(
            base_url=gw.url + "/v1", api_key="sk-test", max_retries=0, default_headers={"connection": "close"}
        )
        for _ in range(40):
            reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content == "ok"
        # Whichever worker answers the scrape, it counts the requests both served.
        assert [_served(gw.url, "/v1/chat/completions") for _ in range(8)] == [40.0] * 8
        assert {f"counter_{pid}.db" for pid in workers} <= {f.name for f in shared.iterdir()}
        # With the memory backend each worker has its own sessions: said once, at startup.
        assert gw.stderr.count('"memory_state_with_workers"') == 1
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]  # stopped with the parent
    assert not shared.exists()  # the parent's own directory goes with it


def test_a_metrics_directory_the_operator_gave_is_used_and_kept(tmp_path, upstream):
    shared = tmp_path / "metrics"
    shared.mkdir()
    port = free_port()
    with _two_workers(tmp_path, upstream, port, PROMETHEUS_MULTIPROC_DIR=str(shared)) as gw:
        # The parent answers once one worker listens; the kernel only spreads connections over
        # the workers listening at that moment, so wait for both before counting on either.
        workers = _listening(gw.process.pid, port)
        assert len(workers) == 2
        wanted = {f"counter_{pid}.db" for pid in workers}
        sent = 0

        def both_counted() -> bool:  # a connection each, until both workers have answered some
            nonlocal sent
            assert httpx.get(gw.url + "/healthz", headers={"connection": "close"}).status_code == 200
            sent += 1
            return sent >= 40 and wanted <= {f.name for f in shared.iterdir()}

        assert _until(both_counted)
        assert _served(gw.url, "/healthz") >= sent
    assert shared.is_dir()


def test_workers_flag_overrides_the_config_and_one_worker_warns_nothing(tmp_path, upstream):
    port = free_port()
    env = child_env(LOOPGUARD_UPSTREAM_BASE_URL=upstream.url + "/v1")
    with gateway_process(
        ["serve", "--port", str(port), "--workers", "1"], port, tmp_path / "stderr.log", env=env
    ) as gw:
        assert _workers(gw.process.pid) == []  # served in the process itself
        assert "PROMETHEUS_MULTIPROC_DIR" not in _environ(gw.process.pid)
        assert "memory_state_with_workers" not in gw.stderr


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads the kernel's socket table")
def test_keep_alive_connections_spread_over_the_workers(tmp_path, upstream):
    """Each worker listens on a socket of its own, so a burst of connections opened at once (a
    client's pool) is spread over the workers instead of all landing on the one that woke
    first: with one shared socket, half the bursts of 32 went to a single worker."""
    port = free_port()
    with _two_workers(tmp_path, upstream, port) as gw:
        workers = _listening(gw.process.pid, port)
        assert len(workers) == 2
        assert _owned(gw.process.pid, _sockets(port, "0A")) == 0  # the parent only holds the port
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
        try:
            for client in clients:
                client.sendall(b"GET /healthz HTTP/1.1\r\nhost: gw\r\n\r\n")
            for client in clients:
                assert client.recv(65536).startswith(b"HTTP/1.1 200")
            established = _sockets(port, "01")
            served = [_owned(pid, established) for pid in workers]
        finally:
            for client in clients:
                client.close()
    assert sum(served) == 32
    assert min(served) >= 4, served  # hashed over two sockets; all but 3 on one: p < 1e-5


def test_workers_on_a_port_in_use_say_so_and_exit(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "serve", "--workers", "2", "--port", str(port)],
            check=False,
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"cannot serve 127.0.0.1:{port}" in done.stderr
