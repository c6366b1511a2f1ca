"""What vetoed exchanges cost in memory when the refused calls carry big arguments, and whether
the gateway gives memory back once traffic goes away.

1. Bytes per session (``tracemalloc`` around a MemoryStore): N sessions, each with one vetoed
   call whose arguments are ~50 KB, stored as the gateway stores them (long strings shortened,
   ``gateway.state.bounds``) and, for comparison, whole.
2. RSS of a real gateway (``python -m gateway serve``, memory backend, ``state.ttl_s`` short):
   before, at the peak of N sessions each getting a 50 KB call vetoed, and after the traffic
   stopped (the idle sweep and cache release, ``gateway/server/idle.py``).

    python benchmarks/veto_memory.py [--sessions 2000] [--served 600] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, answers, free_port, process

sys.path.insert(0, str(ROOT))

from gateway.loopback import serve
from gateway.state import MemoryStore, VetoRecord
from gateway.state.bounds import VETO_TEXT_CHARS, bounded

ARG_CHARS = 50 * 1024


def _args(i: int) -> str:
    return json.dumps({"path": f"out/{i}.txt", "content": (f"{i:08d}" * (ARG_CHARS // 8))[:ARG_CHARS]})


def _exchange(i: int) -> list[dict]:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": "write_file", "arguments": _args(i)}}
        ],
    }
    return [call, {"role": "tool", "tool_call_id": f"call_{i}", "content": "[loopguard] refused: same write again"}]


def per_session(sessions: int, whole: bool) -> float:
    async def fill() -> MemoryStore:
        store = MemoryStore(max_sessions=sessions + 1, max_veto_bytes=1 << 40)
        for i in range(sessions):
            exchange = _exchange(i)
            messages = exchange if whole else bounded(exchange, VETO_TEXT_CHARS)
            await store.add_veto(f"s{i}", VetoRecord(1, f"{i:032x}", tuple(messages)))
        return store

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = asyncio.run(fill())
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del store
    return used / sessions


def _repeating_upstream() -> Starlette:
    async def chat(request: Request) -> Response:
        body = orjson.loads(await request.body())
        call = next(m for m in reversed(body["messages"]) if m.get("tool_calls"))["tool_calls"][0]
        return Response(
            orjson.dumps(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                            "finish_reason": "tool_calls",
                        }
                    ],
                }
            ),
            media_type="application/json",
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _request(i: int) -> dict:
    messages: list[dict] = [{"role": "user", "content": f"write file {i}"}]
    for n in range(3):
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{n}", "type": "function", "function": {"name": "write_file", "arguments": _args(i)}}
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{n}", "content": "written"},
        ]
    return {"model": "m", "messages": messages}


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


POLICY = """version: 1
name: bench
detectors:
  no_progress: {warn_at: 3, reject_at: 4, terminate_at: 6}
"""


def rss_run(served: int, ttl_s: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp, serve(_repeating_upstream(), http="httptools") as upstream:
        Path(tmp, "policy.yaml").write_text(POLICY)
        config = Path(tmp, "gw.yaml")
        config.write_text(
            json.dumps(
                {
                    "upstream": {"base_url": upstream + "/v1"},
                    "policy": str(Path(tmp, "policy.yaml")),
                    "state": {"ttl_s": ttl_s},
                    "logging": {"level": "warning"},
                }
            )
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)]
        with (
            process(command, answers(url + "/healthz"), env=env) as child,
            httpx.Client(base_url=url, timeout=60) as client,
        ):
            for i in range(20):  # warm up: imports, pools
                client.post("/v1/chat/completions", json=_request(10**6 + i), headers={"x-loopguard-session": f"w{i}"})
            time.sleep(2 * ttl_s + 1)  # the warm-up's sessions and caches gone too
            before = _rss(child.pid)
            for i in range(served):
                client.post("/v1/chat/completions", json=_request(i), headers={"x-loopguard-session": f"s{i}"})
            peak = _rss(child.pid)
            deadline = time.monotonic() + max(30.0, 4 * ttl_s)
            after = peak
            while time.monotonic() < deadline:
                time.sleep(1)
                after = _rss(child.pid)
                if after < before + (peak - before) * 0.2:
                    break
    return {
        "served": served,
        "ttl_s": ttl_s,
        "rss_before_mib": before / 2**20,
        "rss_peak_mib": peak / 2**20,
        "rss_after_mib": after / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--served", type=int, default=600)
    parser.add_argument("--ttl", type=float, default=5.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    bounded_b = per_session(args.sessions, whole=False)
    whole_b = per_session(args.sessions, whole=True)
    print(
        f"one vetoed 50 KB call per session, {args.sessions} sessions: stored bounded "
        f"{bounded_b / 1024:.1f} KB/session, whole {whole_b / 1024:.1f} KB/session"
    )
    rss = rss_run(args.served, args.ttl)
    print(
        f"gateway RSS, {rss['served']} sessions with a vetoed 50 KB call: before {rss['rss_before_mib']:.0f} MiB, "
        f"peak {rss['rss_peak_mib']:.0f} MiB, {rss['ttl_s']:g} s+ after the last request {rss['rss_after_mib']:.0f} MiB"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"bounded_bytes_per_session": bounded_b, "whole_bytes_per_session": whole_b, **rss}, indent=2)
        )


if __name__ == "__main__":
    main()
