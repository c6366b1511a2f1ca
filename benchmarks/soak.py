"""Soak runs of the hardening limits, longer than CI affords (the CI versions are in
tests/reliability/). Each starts a real gateway process (this checkout) and a forgetful upstream.

    python benchmarks/soak.py memory --distinct 1500     # RSS growth, 256 KB distinct arguments
    python benchmarks/soak.py memory --distinct 7000
    python benchmarks/soak.py stall                      # small-request latency next to a huge body
    python benchmarks/soak.py slowloris --connections 100

``memory`` prints the gateway's RSS before and after (the bound: +150 MB for 1,500 arguments).
``stall`` sends an 18 MB / 100,000-message body while timing small requests; with the default
``limits.max_messages`` the huge body is refused before it is judged. ``slowloris`` opens slow
bodies and reports how many connections are still held after ``limits.body_timeout_s``.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from harness import ROOT, answers, free_port, percentile, process
from support.memory import forgetful_upstream, rss_bytes, send_big_writes


def _upstream() -> str:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(forgetful_upstream(), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{port}"


def _gateway(upstream: str, extra: str = ""):
    port = free_port()
    config = Path(tempfile.mkdtemp()) / "gw.yaml"
    config.write_text(f"upstream:\n  base_url: {upstream}/v1\nlogging:\n  level: warning\n{extra}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
    return f"http://127.0.0.1:{port}", process(command, answers(f"http://127.0.0.1:{port}/healthz"), env)


def memory(args: argparse.Namespace) -> None:
    url, proc = _gateway(_upstream())
    with proc as child:
        send_big_writes(url, 0, 30)
        before = rss_bytes(child.pid)
        started = time.perf_counter()
        for done in range(0, args.distinct, 250):
            send_big_writes(url, 30 + done, min(250, args.distinct - done))
            print(f"  {done + min(250, args.distinct - done):>6} arguments: RSS {rss_bytes(child.pid) / 2**20:.0f} MiB")
        after = rss_bytes(child.pid)
    print(
        f"memory: {args.distinct} distinct 256 KB arguments in {time.perf_counter() - started:.0f} s; "
        f"RSS {before / 2**20:.0f} -> {after / 2**20:.0f} MiB (+{(after - before) / 2**20:.0f} MiB)"
    )


def stall(args: argparse.Namespace) -> None:
    url, proc = _gateway(_upstream())
    small = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    huge = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 160} for _ in range(100_000)]})
    with proc, httpx.Client(base_url=url, timeout=60) as client:
        latencies: list[float] = []
        results: dict[str, int] = {}

        def send_huge() -> None:
            results["huge"] = client.post("/v1/chat/completions", content=huge).status_code

        thread = threading.Thread(target=send_huge)
        thread.start()
        while thread.is_alive() or len(latencies) < 50:
            began = time.perf_counter()
            client.post("/v1/chat/completions", content=small)
            latencies.append((time.perf_counter() - began) * 1000)
        thread.join()
    print(
        f"stall: huge body ({len(huge) / 2**20:.1f} MB) -> {results['huge']}; small requests meanwhile: "
        f"n={len(latencies)} p50={percentile(latencies, 50):.1f} ms max={max(latencies):.1f} ms"
    )


def slowloris(args: argparse.Namespace) -> None:
    url, proc = _gateway(_upstream(), "limits:\n  body_timeout_s: 5\n")
    port = int(url.rsplit(":", 1)[1])
    with proc:
        socks = []
        for _ in range(args.connections):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
            socks.append(sock)
        time.sleep(args.wait)
        held = 0
        for sock in socks:
            sock.settimeout(0.5)
            try:
                sock.recv(1)  # b"" (closed) or the first byte of the 408: released
            except TimeoutError:
                held += 1
            sock.close()
    print(f"slowloris: {args.connections} slow bodies, {held} still held after {args.wait:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="run", required=True)
    sub.add_parser("memory").add_argument("--distinct", type=int, default=1500)
    sub.add_parser("stall")
    lo = sub.add_parser("slowloris")
    lo.add_argument("--connections", type=int, default=100)
    lo.add_argument("--wait", type=float, default=20.0)
    args = parser.parse_args()
    {"memory": memory, "stall": stall, "slowloris": slowloris}[args.run](args)


if __name__ == "__main__":
    main()
