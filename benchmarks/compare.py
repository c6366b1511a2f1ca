"""Gateways from several source trees or configs, side by side in one run: what moved the hop.

Two runs of ``overhead.py`` on the same code differ by up to 0.15 in the added-p50 ratio on a
shared 2-core machine, more than most changes move it, so compare trees in one run instead: one
canned upstream, the aiohttp relay, and a gateway per tree, requests interleaved round-robin as
``overhead.py`` sends them. Listing a tree twice shows what the noise is.

    git worktree add /tmp/before HEAD~3
    python benchmarks/compare.py -n 1000 --tree now=. --tree before=/tmp/before --tree now2=.

Each gateway runs from its own tree as the working directory, because ``python -m gateway`` puts
the working directory before PYTHONPATH and an installed copy on the import path.

``--tree NAME=PATH@FILE`` runs a tree with FILE's keys over the configuration (a Redis backend
for two trees, say). ``--config NAME=FILE`` adds a gateway from this tree whose configuration is the benchmark's with
FILE's top-level keys put over it: what a policy, a log level or the Redis backend costs.

    python benchmarks/compare.py --tree now=. --config no-detectors=/tmp/no-detectors.yaml
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, answers, clients, cpu_seconds, free_port, interleaved, percentile, process
from overhead import conversation, growing, one

FLOOR = "aiohttp relay"


Gateways = dict[str, tuple[Path, Path | None]]  # name -> (source tree, config keys put over the base)


def servers(gateways: Gateways, stack: ExitStack, logs: Path) -> tuple[dict[str, str], dict[str, int]]:
    """Start the upstream, the relay and each gateway (its log lines to ``logs/<name>.log``);
    their base URLs and process ids by name."""
    names = ["direct", FLOOR, *gateways]
    urls = {name: f"http://127.0.0.1:{free_port()}" for name in names}
    port = {name: url.rsplit(":", 1)[1] for name, url in urls.items()}
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPGUARD_")}
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    base = {"upstream": {"base_url": f"{urls['direct']}/v1"}, "logging": {"format": "json", "level": "info"}}
    stack.enter_context(
        process(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "benchmarks.overhead:upstream_app",
                "--port",
                port["direct"],
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--log-level",
                "warning",
                "--no-access-log",
                "--lifespan",
                "off",
            ],
            answers(urls["direct"] + "/v1/models"),
            {**env, "PYTHONPATH": str(ROOT)},
        )
    )
    pids = {
        FLOOR: stack.enter_context(
            process(
                [
                    sys.executable,
                    str(ROOT / "benchmarks/relay.py"),
                    "--upstream",
                    urls["direct"],
                    "--client",
                    "aiohttp",
                    "--port",
                    port[FLOOR],
                ],
                answers(urls[FLOOR] + "/v1/models"),
                env,
            )
        ).pid
    }
    for number, (name, (tree, extra)) in enumerate(gateways.items()):
        overrides = (yaml.safe_load(extra.read_text()) or {}) if extra else {}
        config = folder / f"gateway{number}.yaml"
        config.write_text(yaml.safe_dump({**base, **overrides}))
        pids[name] = stack.enter_context(
            process(
                [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", port[name]],
                answers(urls[name] + "/healthz"),
                {**env, "PYTHONPATH": str(tree)},
                cwd=tree,
                stderr=logs / f"gateway{number}.log",
            )
        ).pid
    return urls, pids


def measure(
    urls: dict[str, str], pids: dict[str, int], bodies: list[bytes], n: int, warmup: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each target's latencies, and the CPU seconds each relay or gateway process spent per
    measured request (steadier than latency on a shared machine: other load moves it less).
    Round ``r`` sends ``bodies[r % len(bodies)]`` to every target."""
    names = list(urls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, float] = {}
    with clients(urls) as pool:
        for round_, name in interleaved(names, warmup + n):
            if round_ == warmup and name in pids:
                cpu[name] = -cpu_seconds(pids[name])
            elapsed, _ = one(pool[name], bodies[round_ % len(bodies)])
            if round_ >= warmup:
                samples[name].append(elapsed)
    return samples, {name: (spent + cpu_seconds(pids[name])) / n for name, spent in cpu.items()}


def own_time(log: Path, n: int) -> float | None:
    """The p50 of the gateway's own time on the last ``n`` requests (the ``overhead_ms`` of its
    request lines: reading, judging and writing, without the upstream's wait), in seconds: what
    its code costs inside the serving process, warm or cold as the benchmark leaves it."""
    spent = []
    for line in log.read_bytes().splitlines():
        with contextlib.suppress(orjson.JSONDecodeError):
            event = orjson.loads(line)
            if isinstance(event, dict) and event.get("event") == "request":
                spent.append(event["overhead_ms"] / 1000)
    return percentile(spent[-n:], 50) if spent else None


def _tree(spec: str) -> tuple[Path, Path | None]:
    """``PATH`` or ``PATH@FILE``: a source tree, with FILE's config keys over the benchmark's."""
    path, _, extra = spec.partition("@")
    return Path(path).resolve(), Path(extra).resolve() if extra else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tree", action="append", default=[], metavar="NAME=PATH", help="a gateway from this source tree (repeatable)"
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a gateway from this tree, FILE's config keys over the benchmark's (repeatable)",
    )
    parser.add_argument("-n", type=int, default=1000, help="measured requests per target")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--stream", action="store_true", help="streamed requests")
    parser.add_argument(
        "--growing",
        action="store_true",
        help="overhead.py's growing run (60 to 500 KB, one body per round) instead of one body; "
        "-n is then the run's length less the warm-up",
    )
    args = parser.parse_args(argv)
    gateways: Gateways = {name: _tree(path) for name, path in (t.split("=", 1) for t in args.tree)}
    gateways |= {name: (ROOT, Path(path).resolve()) for name, path in (c.split("=", 1) for c in args.config)}
    if not gateways:
        parser.error("name at least one --tree or --config")
    if args.growing:
        bodies = growing()
        args.n = len(bodies) - args.warmup
    else:
        bodies = [orjson.dumps({**conversation(), "stream": True} if args.stream else conversation())]
    with tempfile.TemporaryDirectory() as folder:
        logs = Path(folder)
        with ExitStack() as stack:
            samples, cpu = measure(*servers(gateways, stack, logs), bodies, args.n, args.warmup)
        own = {name: own_time(logs / f"gateway{number}.log", args.n) for number, name in enumerate(gateways)}
    direct = percentile(samples["direct"], 50)
    floor = percentile(samples[FLOOR], 50) - direct
    kind = "growing" if args.growing else "stream" if args.stream else "unary"
    print(
        f"{kind}: direct p50 {direct * 1000:.2f} ms, "
        f"{FLOOR} adds {floor * 1000:.3f} ms, CPU {cpu[FLOOR] * 1000:.3f} ms a request"
    )
    for name in gateways:
        added = percentile(samples[name], 50) - direct
        spent = f"{own[name] * 1000:.3f} ms" if own[name] is not None else "not logged"
        print(
            f"  {name}: adds {added * 1000:.3f} ms p50, {added / floor:.2f}x the relay's; "
            f"CPU {cpu[name] * 1000:.3f} ms a request, {cpu[name] / cpu[FLOOR]:.2f}x; own time p50 {spent}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
