"""Agents whose history grows by one call per request, at several history lengths, side by side
with the aiohttp relay: what the gateway costs as a conversation gets long.

A running agent sends its whole history on every request, one call and its result longer each
time. Per history length (``--sizes``, messages), ``--sessions`` agents each run a task of
their own (another conversation, another session to the gateway) from that length on, one
request at a time, the sessions and the targets interleaved: round ``r`` sends every session's
``r``-th body to every target, the first target rotating. The first ``--warmup`` rounds are
not measured: the gateway meets each session as a replica that served its earlier requests.
Results are ~2.4 KB each, so bodies run from ~25 KB at 20 messages to ~750 KB at 600.

Targets: the canned upstream of ``overhead.py`` (direct), the aiohttp relay, and for each
``--tree`` (default: this one) a gateway on in-memory state and, unless ``--no-redis``, one on a
redis-server started here (``state.backend: redis``, mirror on: the default). Per length: each
target's added p50 and p99 (p(target) - p(direct)), the gateway's added p50 over the relay's,
its own extra (its added p50 minus the relay's), its own time (``overhead_ms`` of its request
lines) and each server's CPU time per request.

    python benchmarks/sessions.py                                  # 20, 200, 600 messages
    python benchmarks/sessions.py --tree now=. --tree before=/tmp/before --no-redis
    python benchmarks/sessions.py --sizes 20 600 --sessions 10 --requests 5   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import FLOOR, Gateways, servers
from harness import clients, cpu_seconds, free_port, percentile, process, redis_answers
from overhead import _redis_server, conversation, one

RESULT_LINES = 36  # ~2.6 KB a result: ~1.25 KB a message


def bodies(sessions: int, size: int, rounds: int) -> list[list[bytes]]:
    """Per round, each session's body: ``size`` messages at the first, one call and its result
    more at each next."""
    out: list[list[bytes]] = [[] for _ in range(rounds)]
    for number in range(sessions):
        task = f"Task {number}: make the retry policy of service {number} configurable, then run its tests."
        full = conversation(size + 2 * rounds, task, RESULT_LINES)
        for round_ in range(rounds):
            out[round_].append(orjson.dumps({**full, "messages": full["messages"][: size + 2 * round_]}))
    return out


def measure(
    urls: dict[str, str], pids: dict[str, int], rounds: list[list[bytes]], warmup: int
) -> tuple[dict[str, list[float]], dict[str, float], int]:
    """Latencies of the measured rounds by target, CPU seconds per measured request of each
    server, and how many requests each target was sent (warm-up included)."""
    names = list(urls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, float] = {}
    sent = 0
    with clients(urls) as pool:
        for round_, row in enumerate(rounds):
            if round_ == warmup:
                cpu = {name: -cpu_seconds(pid) for name, pid in pids.items()}
            for number, body in enumerate(row):
                shift = (round_ * len(row) + number) % len(names)
                for name in [*names[shift:], *names[:shift]]:
                    elapsed, action = one(pool[name], body)
                    if name not in ("direct", FLOOR) and action != "pass":
                        raise RuntimeError(f"{name}: {action} on a loop-free history")
                    if round_ >= warmup:
                        samples[name].append(elapsed)
                sent += 1
    measured = sum(len(row) for row in rounds[warmup:])
    return samples, {name: (spent + cpu_seconds(pids[name])) / measured for name, spent in cpu.items()}, sent


def own_times(log: Path) -> list[float]:
    """The ``overhead_ms`` of the gateway's request lines, in order, in seconds."""
    out = []
    for line in log.read_bytes().splitlines():
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("event") == "request":
            out.append(event["overhead_ms"] / 1000)
    return out


def gateways(trees: Gateways, redis: bool, folder: Path, stack: ExitStack) -> Gateways:
    """Each tree's gateway in memory and, with ``redis``, on a redis-server started here."""
    out: Gateways = {}
    url = None
    if redis:
        port = free_port()
        command = [_redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        stack.enter_context(process([*command, "--dir", str(folder)], redis_answers(port)))
        url = f"redis://127.0.0.1:{port}/0"
    for name, (tree, extra) in trees.items():
        out[name] = (tree, extra)
        if url is not None:
            keys = (yaml.safe_load(extra.read_text()) or {}) if extra else {}
            config = folder / f"{name}-redis.yaml"
            config.write_text(yaml.safe_dump({**keys, "state": {"backend": "redis", "url": url}}))
            out[f"{name} redis"] = (tree, config)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 200, 600], help="history lengths (messages)")
    parser.add_argument("--sessions", type=int, default=30, help="agents growing their history side by side")
    parser.add_argument("--requests", type=int, default=20, help="measured requests per session and length")
    parser.add_argument("--warmup", type=int, default=2, help="requests per session before measuring")
    parser.add_argument(
        "--tree", action="append", default=[], metavar="NAME=PATH", help="a gateway from this source tree (repeatable)"
    )
    parser.add_argument("--no-redis", action="store_true", help="leave out the Redis-backed gateways")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    trees: Gateways = {name: (Path(path).resolve(), None) for name, path in (t.split("=", 1) for t in args.tree)}
    trees = trees or {"gateway": (Path(__file__).resolve().parents[1], None)}
    results: dict = {
        "sessions": args.sessions,
        "requests": args.requests,
        "warmup": args.warmup,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "sizes": {},
    }
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        targets = gateways(trees, not args.no_redis, folder, stack)
        urls, pids = servers(targets, stack, folder)
        logs = {name: folder / f"gateway{number}.log" for number, name in enumerate(targets)}
        done = {name: 0 for name in targets}
        for size in args.sizes:
            rounds = bodies(args.sessions, size, args.warmup + args.requests)
            samples, cpu, sent = measure(urls, pids, rounds, args.warmup)
            measured = args.sessions * args.requests
            own = {}
            for name, log in logs.items():
                times = own_times(log)[done[name] : done[name] + sent]
                done[name] += sent
                own[name] = percentile(times[-measured:], 50) if times else None
            results["sizes"][size] = row(samples, cpu, own, [len(b) for b in rounds[0]])
    print(report(results, list(targets)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def row(samples: dict[str, list[float]], cpu: dict[str, float], own: dict[str, float | None], sizes: list[int]) -> dict:
    direct = {q: percentile(samples["direct"], q) for q in (50, 99)}
    out: dict = {"body_kb": sum(sizes) / len(sizes) / 1024, "direct_p50_ms": direct[50] * 1000}
    for name, values in samples.items():
        if name == "direct":
            continue
        out[name] = {
            "added_p50_ms": (percentile(values, 50) - direct[50]) * 1000,
            "added_p99_ms": (percentile(values, 99) - direct[99]) * 1000,
            "cpu_ms": cpu[name] * 1000,
            "own_p50_ms": own[name] * 1000 if own.get(name) is not None else None,
        }
    return out


def report(results: dict, names: list[str]) -> str:
    lines = [
        f"{results['sessions']} sessions x {results['requests']} requests per length (+{results['warmup']} warm-up); "
        f"{results['machine']['cpus']} CPUs, load average before {results['machine']['load'][0]:.1f}",
        "",
        "| messages | body KB | target | added p50 / p99 ms | x the relay's p50 | own extra ms | own time p50 ms "
        "| CPU ms a request |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, r in results["sizes"].items():
        floor = r[FLOOR]
        for name in [FLOOR, *names]:
            t = r[name]
            ratio = t["added_p50_ms"] / floor["added_p50_ms"] if floor["added_p50_ms"] > 0 else float("nan")
            extra = t["added_p50_ms"] - floor["added_p50_ms"]
            own = f"{t['own_p50_ms']:.2f}" if t["own_p50_ms"] is not None else ""
            lines.append(
                f"| {size} | {r['body_kb']:.0f} | {name} | {t['added_p50_ms']:.2f} / {t['added_p99_ms']:.2f} "
                f"| {ratio:.2f} | {'' if name == FLOOR else f'{extra:.2f}'} | {own} | {t['cpu_ms']:.2f} |"
            )
    sizes = list(results["sizes"])
    if len(sizes) > 1:
        first, last = results["sizes"][sizes[0]], results["sizes"][sizes[-1]]
        for name in names:
            grew = (last[name]["added_p50_ms"] - last[FLOOR]["added_p50_ms"]) / max(
                1e-9, first[name]["added_p50_ms"] - first[FLOOR]["added_p50_ms"]
            )
            lines.append(f"\n{name}: own extra at {sizes[-1]} messages / at {sizes[0]}: {grew:.2f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
