"""What open console tabs cost other traffic: a gateway keeping 12,000 console events, new ones
arriving all the time, three tabs polling its feed as the page does, and plain requests timed
with and without the tabs, side by side in one run.

    python benchmarks/console_tabs.py                      # memory backend, ~3 minutes on 2 vCPUs
    python benchmarks/console_tabs.py --backend redis      # the events log on a redis-server
    python benchmarks/console_tabs.py --events 12000 --rounds 8 -n 150 --tabs 3

Processes: the canned upstream of ``overhead.py``, the gateway (``ui.max_events`` = ``--events``,
the console open: no keys), a source of new events (``--source``: looping requests of fresh
sessions, ~20 a second, each warned, so every poll finds new events: the worst case for a feed),
and, in the "tabs" phases only, ``--tabs`` pollers doing what ``console.js`` does (the feed every
300 ms with ``since=<newest>``, the status every 5 s). The measured client sends a loop-free
60-message request at a time and times it to its last byte. Phases alternate (no tabs, tabs, ...)
for ``--rounds`` rounds of ``-n`` requests each, so machine noise hits both alike; the result is
each phase's p50 and p99 and the ratio tabs / no tabs (target: p50 within 10%).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, answers, cpu_seconds, free_port, percentile, process, redis_answers
from overhead import HEADERS, _redis_server, conversation, looping, one

FEED_S, STATUS_S = 0.3, 5.0  # console.js's FEED_MS and STATUS_MS
SOURCE_PER_S = 20


async def tab(host: str, port: int) -> None:
    """One tab: the feed every 300 ms from the newest id it has, the status every 5 s. Raw
    keep-alive HTTP/1.1, so the tab's own client work stays small next to the gateway's (a real
    tab runs in a browser on another machine)."""
    reader, writer = await asyncio.open_connection(host, port)
    newest, status_due = "", 0.0

    async def get(target: str) -> bytes:
        writer.write(f"GET {target} HTTP/1.1\r\nhost: {host}\r\n\r\n".encode())
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        at = head.index(b"\r\ncontent-length:")
        return await reader.readexactly(int(head[at + 17 : head.index(b"\r\n", at + 2)]))

    while True:
        data = orjson.loads(await get("/ui/api/feed?since=" + quote(newest)))
        newest = data.get("newest", newest)
        if time.monotonic() >= status_due:
            await get("/ui/api/status")
            status_due = time.monotonic() + STATUS_S
        await asyncio.sleep(FEED_S)


def tabs_main(url: str, count: int) -> None:
    """``--poll``: ``count`` tabs in this process until it is terminated."""
    host, port = url.removeprefix("http://").split(":")

    async def tabs() -> None:
        await asyncio.gather(*(tab(host, int(port)) for _ in range(count)))

    asyncio.run(tabs())


def source_main(url: str, first: int) -> None:
    """``--source``: looping requests of fresh sessions, ~``SOURCE_PER_S`` a second, each warned."""
    body = orjson.dumps(looping())
    with httpx.Client(base_url=url, timeout=60) as http:
        n = first
        while True:
            started = time.monotonic()
            http.post("/v1/chat/completions", content=body, headers={**HEADERS, "x-loopguard-session": f"src-{n}"})
            n += 1
            time.sleep(max(0.0, 1 / SOURCE_PER_S - (time.monotonic() - started)))


async def fill(url: str, events: int, concurrency: int = 16) -> None:
    """Warned requests of fresh sessions until the console keeps ``events`` events (a burst may
    overflow the console sink's queue, which drops rather than slow traffic: topped up)."""
    body = orjson.dumps(looping())
    sessions = iter(range(10**9))
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        kept, before = 0, -1
        while kept < events and kept > before:  # not growing: the memory log's byte cap binds
            before = kept
            left = events - kept

            async def worker() -> None:
                nonlocal left
                while left > 0:
                    left -= 1
                    headers = {**HEADERS, "x-loopguard-session": f"fill-{next(sessions)}"}
                    with contextlib.suppress(httpx.HTTPError):  # a dropped connection: topped up below
                        await http.post("/v1/chat/completions", content=body, headers=headers)

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            await asyncio.sleep(1.0)  # the sink writes off the request path
            kept = orjson.loads((await http.get("/ui/api/feed")).content)["kept"]


@contextmanager
def gateway(events: int, backend: str):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env = {k: v for k, v in env.items() if not k.startswith("LOOPGUARD_")}
    ports = {"upstream": free_port(), "gateway": free_port()}
    upstream = f"http://127.0.0.1:{ports['upstream']}"
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        config = tmp / "gateway.yaml"
        text = f"upstream:\n  base_url: {upstream}/v1\nlogging:\n  format: json\n  level: info\nui:\n  max_events: {events}\n"
        if backend == "redis":
            port = free_port()
            redis = [_redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            stack.enter_context(process([*redis, "--dir", str(tmp)], redis_answers(port)))
            text += f"state:\n  backend: redis\n  url: redis://127.0.0.1:{port}/0\n"
        config.write_text(text)
        serve_upstream = [sys.executable, "-m", "uvicorn", "benchmarks.overhead:upstream_app", "--port"]
        serve_upstream += [str(ports["upstream"]), "--loop", "uvloop", "--http", "httptools", "--log-level", "warning"]
        stack.enter_context(process([*serve_upstream, "--no-access-log", "--lifespan", "off"], answers(upstream), env))
        command = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(ports["gateway"])]
        url = f"http://127.0.0.1:{ports['gateway']}"
        child = stack.enter_context(process(command, answers(url + "/healthz"), env))
        yield url, env, child.pid


def helper(args: list[str], env: dict[str, str], nice: int = 0) -> subprocess.Popen:
    """This script in another process; ``nice``: below the gateway, as a browser on another
    machine would be (the tabs' own client work is not the gateway's cost)."""
    command = [*(["nice", "-n", str(nice)] if nice else []), sys.executable, __file__, *args]
    return subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)


def stop(child: subprocess.Popen) -> None:
    child.terminate()
    child.wait(timeout=10)


def measure(args: argparse.Namespace) -> dict:
    body = orjson.dumps(conversation())
    samples: dict[str, list[float]] = {"no tabs": [], "tabs": []}
    cpu = {"no tabs": 0.0, "tabs": 0.0}  # the gateway's CPU seconds, and wall seconds, per phase
    wall = {"no tabs": 0.0, "tabs": 0.0}
    with gateway(args.events, args.backend) as (url, env, pid):
        started = time.monotonic()
        asyncio.run(fill(url, args.events))
        filled_s = time.monotonic() - started
        source = helper(["--source", url], env)
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                for _ in range(20):  # warm the connection and the gateway's caches
                    one(client, body)
                for round_ in range(args.rounds):
                    for phase in ("no tabs", "tabs") if round_ % 2 == 0 else ("tabs", "no tabs"):
                        tabs = (
                            helper(["--poll", url, "--tabs", str(args.tabs)], env, nice=19) if phase == "tabs" else None
                        )
                        try:
                            time.sleep(1.0)  # the tabs' first full reads done, as a page open for a while
                            cpu_before, wall_before = cpu_seconds(pid), time.monotonic()
                            samples[phase] += [one(client, body)[0] for _ in range(args.n)]
                            cpu[phase] += cpu_seconds(pid) - cpu_before
                            wall[phase] += time.monotonic() - wall_before
                        finally:
                            if tabs is not None:
                                stop(tabs)
                kept = orjson.loads(client.get("/ui/api/feed").content)["kept"]
        finally:
            stop(source)
    busy = {phase: cpu[phase] / wall[phase] for phase in cpu}
    return {"samples": samples, "kept": kept, "filled_s": filled_s, "busy": busy}


def report(args: argparse.Namespace, result: dict) -> str:
    rows = []
    p50 = {}
    for phase, values in result["samples"].items():
        p50[phase] = percentile(values, 50) * 1000
        busy = result["busy"][phase] * 100
        rows.append(
            f"| {phase} | {len(values)} | {p50[phase]:.2f} | {percentile(values, 99) * 1000:.2f} | {busy:.0f}% |"
        )
    ratio = p50["tabs"] / p50["no tabs"]
    head = (
        f"backend {args.backend}, {result['kept']:,} events kept (filled in {result['filled_s']:.0f} s), "
        f"{args.tabs} tabs, ~{SOURCE_PER_S} new events/s\n\n"
        "| phase | requests | p50 ms | p99 ms | gateway CPU busy |\n|---|---|---|---|---|\n"
    )
    return head + "\n".join(rows) + f"\n\np50 tabs / no tabs: {ratio:.3f} (target <= 1.10)\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=12_000)
    parser.add_argument("--tabs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("-n", type=int, default=150, help="requests per phase per round")
    parser.add_argument("--backend", choices=("memory", "redis"), default="memory")
    parser.add_argument("--poll", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--source", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.poll:
        tabs_main(args.poll, args.tabs)
        return 0
    if args.source:
        source_main(args.source, 0)
        return 0
    print(report(args, measure(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
