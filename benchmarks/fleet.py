"""What the fleet check costs a request on the hot path: ``plan_request`` (the guard's whole
request path: history, session state, trace, detectors, the edit) with the fleet view off and on,
side by side, in one process, on the shipped default policy.

Bodies: a loop-free 60-message agent history whose last round is
* ``local``  - a shell call's result: the fleet notes nothing, no store round trip;
* ``remote`` - an MCP tool's result (a success): the fleet notes it, one store round trip
  (the worst case: every request of an agent calling remote tools pays it);
the same body again and again in sessions of 50 requests (the history cache's warm path).
Stores: memory, and Redis on a redis-server this script starts (``--redis``). Targets are
interleaved round-robin so machine noise lands on all alike; mean and p50/p99 per request.

    python benchmarks/fleet.py [-n 2000] [--redis] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.audit.bus import AuditBus
from gateway.config import Config, FleetConfig
from gateway.fleet.service import Fleet
from gateway.guard.history import HistoryCache
from gateway.guard.planner import plan_request
from gateway.policy.holder import PolicyHolder
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.state import build_fleet
from gateway.state.memory import MemoryStore

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
LOG = structlog.get_logger("bench")


def history(last: str, rounds: int = 29) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a support agent. " * 20},
        {"role": "user", "content": "Resolve ticket 4711 for the customer."},
    ]
    for n in range(rounds):
        tool, args, result = ("bash", {"command": f"grep -n order{n} logs/app.log"}, f"{n}: order{n} shipped " * 12)
        if n == rounds - 1 and last == "remote":
            tool, args, result = "mcp__crm__lookup_customer", {"id": 4711 + n}, '{"name": "Ada", "tier": "gold"}'
        call = {"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": result})
    return messages


class Target:
    def __init__(self, name: str, fleet: Fleet | None, store: Any) -> None:
        self.name, self.fleet, self.store = name, fleet, store
        self.policies = PolicyHolder(Config().policy)
        self.history = HistoryCache()
        self.times: list[float] = []

    async def once(self, payload: dict[str, Any], session: str) -> None:
        items = CHAT.requests.items(payload)
        start = time.perf_counter()
        await plan_request(
            CHAT,
            payload,
            items,
            {"x-loopguard-session": session, "authorization": "Bearer sk-bench"},
            "/v1/chat/completions",
            self.policies.current,
            self.store,
            LOG,
            history=self.history,
            fleet=self.fleet,
        )
        self.times.append(time.perf_counter() - start)


async def measure(n: int, redis_url: str | None) -> dict[str, Any]:
    stores: list[tuple[str, Any]] = [("memory", MemoryStore())]
    if redis_url:
        from gateway.state.redis import RedisStore

        stores.append(("redis", RedisStore(redis_url, key_prefix="bench:", op_timeout_s=1.0)))
    results: dict[str, Any] = {}
    for kind, store in stores:
        for last in ("local", "remote"):
            targets = [
                Target("off", None, store),
                Target("on", Fleet(FleetConfig(), build_fleet(store), AuditBus([]), LOG), store),
            ]
            base = history(last)
            for i in range(n):
                payload = {"model": "m", "messages": base}
                for t in targets[i % 2 :] + targets[: i % 2]:
                    await t.once(payload, f"{t.name}-{i // 50}")
            for t in targets:
                kept = sorted(t.times[n // 10 :])  # warm-up dropped
                results[f"{kind}/{last}/{t.name}"] = {
                    "mean_us": round(statistics.fmean(kept) * 1e6, 1),
                    "p50_us": round(kept[len(kept) // 2] * 1e6, 1),
                    "p99_us": round(kept[int(len(kept) * 0.99)] * 1e6, 1),
                }
            off, on = results[f"{kind}/{last}/off"], results[f"{kind}/{last}/on"]
            results[f"{kind}/{last}/ratio"] = round(on["mean_us"] / off["mean_us"], 3)
        await store.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--redis", action="store_true", help="also on a redis-server started here")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    server = None
    url = None
    workdir = tempfile.mkdtemp()
    try:
        if args.redis:
            binary = shutil.which("redis-server")
            if binary is None:
                sys.exit("redis-server is not on PATH")
            port = 6391
            server = subprocess.Popen(
                [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", workdir],
                stdout=subprocess.DEVNULL,
            )
            time.sleep(0.5)
            url = f"redis://127.0.0.1:{port}/0"
        results = asyncio.run(measure(args.n, url))
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    for key, value in results.items():
        print(f"{key:24} {value}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
