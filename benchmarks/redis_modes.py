"""What each Redis deployment adds: the gateway in memory and over one Redis node, a Redis Cluster (3 primaries
+ 3 replicas) and a Sentinel set (1 primary, 1 replica, 3 sentinels), side by side with the
aiohttp relay (the floor for any Python hop) in front of the same canned upstream.

Every server is its own process on loopback, started here (redis-server, redis-cli --cluster
create; tests/support/redis_cluster.py). The gateways run with the mirror off by default, so
every request reads its session's state from Redis and notes it in its tenant's index (the
cost a request pays when its replica does not know the session: the worst case); ``--mirror``
measures the usual case instead, where a process answers sessions it knows from its mirror.

Latency: closed loop, one request at a time, targets interleaved round-robin (the first target
rotating every round); each request names a new session (``x-loopguard-session``), so cluster
requests land on every primary. Added = p(target) - p(direct), p50 and p99.
Throughput: benchmarks/loadgen.py, 32 keep-alive connections, ``--rounds`` runs of ``--seconds``
per target interleaved, the median counts; loadgen sends one body, so one session.

    python benchmarks/redis_modes.py [-n 200] [--rounds 3] [--seconds 2] [--mirror] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, contextmanager
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from harness import ROOT, answers, clients, free_port, interleaved, percentile, process
from overhead import conversation, throughput
from support.redis_cluster import SENTINEL_SERVICE, Node, RedisCluster, SentinelSet

FLOOR = "aiohttp relay"
MODES = ("single", "cluster", "sentinel")
TARGETS = ("direct", FLOOR, "gateway memory", *(f"gateway {mode}" for mode in MODES))
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench-not-a-key"}


@contextmanager
def targets(mirror: bool):
    """Start the three Redis deployments, the upstream, the relay and one gateway per mode;
    yield {target: base URL}, {target: pid}."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPGUARD_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    ports = {name: free_port() for name in TARGETS}
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    pids: dict[str, int] = {}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        single = Node(tmp / "single", []).start()
        stack.callback(single.stop)
        cluster = RedisCluster(tmp / "cluster").start()
        stack.callback(cluster.stop)
        sentinels = SentinelSet(tmp / "sentinel").start()
        stack.callback(sentinels.stop)
        reach = {
            "single": {"url": f"redis://127.0.0.1:{single.port}/0"},
            "cluster": {"mode": "cluster", "url": cluster.url},
            "sentinel": {"mode": "sentinel", "sentinels": sentinels.addresses, "service": SENTINEL_SERVICE},
        }
        upstream = [sys.executable, "-m", "uvicorn", "benchmarks.overhead:upstream_app", "--loop", "uvloop"]
        upstream += ["--http", "httptools", "--log-level", "warning", "--no-access-log", "--lifespan", "off"]
        commands = {
            "direct": upstream,
            FLOOR: [
                sys.executable,
                str(ROOT / "benchmarks/relay.py"),
                "--upstream",
                urls["direct"],
                "--client",
                "aiohttp",
            ],
        }
        for mode in ("memory", *MODES):
            config = tmp / f"{mode}.yaml"
            state = {"backend": "memory"} if mode == "memory" else {"backend": "redis", "mirror": mirror, **reach[mode]}
            config.write_text(json.dumps({"upstream": {"base_url": urls["direct"] + "/v1"}, "state": state}))
            commands[f"gateway {mode}"] = [sys.executable, "-m", "gateway", "serve", "--config", str(config)]
        for name in TARGETS:
            probe = urls[name] + ("/healthz" if name.startswith("gateway") else "/v1/models")
            pids[name] = stack.enter_context(
                process([*commands[name], "--port", str(ports[name])], answers(probe), env)
            ).pid
        yield urls, pids


def latency(urls: dict[str, str], body: bytes, n: int, warmup: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in TARGETS}
    with clients(urls) as pool:
        for round_, name in interleaved(TARGETS, warmup + n):
            headers = {**HEADERS, "x-loopguard-session": uuid.uuid4().hex}
            started = time.perf_counter()
            response = pool[name].post("/v1/chat/completions", content=body, headers=headers)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise RuntimeError(f"{name}: HTTP {response.status_code} {response.text[:200]}")
            if round_ >= warmup:
                samples[name].append(elapsed)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="measured requests per target")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each throughput run")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs per target (the median counts)")
    parser.add_argument("--mirror", action="store_true", help="gateways answer known sessions from their mirror")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    body = orjson.dumps(conversation())
    results: dict = {
        "n": args.n,
        "mirror": args.mirror,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
    }
    with targets(args.mirror) as (urls, pids), tempfile.NamedTemporaryFile(suffix=".json") as body_file:
        samples = latency(urls, body, args.n, args.warmup)
        Path(body_file.name).write_bytes(body)
        runs: dict[str, list[dict]] = {name: [] for name in TARGETS}
        for _, name in interleaved(TARGETS, args.rounds):
            runs[name].append(throughput(urls[name], pids[name], Path(body_file.name), args.concurrency, args.seconds))
    p50 = {name: percentile(values, 50) * 1000 for name, values in samples.items()}
    p99 = {name: percentile(values, 99) * 1000 for name, values in samples.items()}
    rows = {}
    for name in TARGETS:
        rows[name] = {
            "p50_added_ms": p50[name] - p50["direct"],
            "p99_added_ms": p99[name] - p99["direct"],
            "rps": statistics.median(run["rps"] for run in runs[name]),
            "cpu_ms": statistics.median(run["cpu_ms"] for run in runs[name]),
            "errors": sum(sum(run["errors"].values()) for run in runs[name]),
        }
    results["targets"] = rows
    floor = rows[FLOOR]
    print(f"mirror {'on' if args.mirror else 'off'}; n={args.n} per target; {args.concurrency} connections")
    print("| target | p50 added (ms) | p99 added (ms) | p50 added / relay's | req/s | req/s / relay's | errors |")
    print("|---|---|---|---|---|---|---|")
    for name, row in rows.items():
        if name == "direct":
            continue
        ratio = row["p50_added_ms"] / floor["p50_added_ms"] if floor["p50_added_ms"] > 0 else float("nan")
        print(
            f"| {name} | {row['p50_added_ms']:.2f} | {row['p99_added_ms']:.2f} | {ratio:.2f} "
            f"| {row['rps']:.0f} | {row['rps'] / floor['rps']:.2f} | {row['errors']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
