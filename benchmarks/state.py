"""What shared state costs: per-request latency with the Redis backend vs in-memory, and the
memory one session takes in the in-memory store.

Latency: three targets in front of one fast canned upstream, each its own process (uvicorn,
uvloop when installed): ``direct`` (the upstream itself), ``memory`` (``python -m gateway
serve`` with ``state.backend: memory``) and ``redis`` (the same with ``state.backend: redis``
on a local redis-server this script starts). Closed loop, one request at a time, the targets
interleaved round-robin (the first target rotates every round) so machine noise lands on all
alike. The body is a loop-free 60-message agent history. Every request reads the session's
state and swaps its history mark in one pipeline, so the Redis gateway pays one round trip per
request. Added latency = p(target) - p(direct), at p50 and p99.

Memory: ``tracemalloc`` around filling a MemoryStore with 10,000 sessions, each with the history
mark every request leaves; then again with one vetoed exchange per session.

    python benchmarks/state.py [-n 300] [--warmup 30] [--sessions 10000] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import tracemalloc
from contextlib import ExitStack, contextmanager
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when uvicorn imports this module

from harness import ROOT, answers, clients, free_port, interleaved, percentile, process, redis_answers
from overhead import conversation

sys.path.insert(0, str(ROOT))

from gateway.protocols.chat import replies
from gateway.state import HistoryMark, MemoryStore, VetoRecord
from gateway.trace.model import ToolCall

TARGETS = ("direct", "memory", "redis")

# ---- the canned upstream and the conversation --------------------------------------------------


COMPLETION = orjson.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Reading the README first."},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5200, "completion_tokens": 8, "total_tokens": 5208},
    }
)
_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(COMPLETION)).encode())]


async def upstream_app(scope, receive, send):
    """As fast as an ASGI app gets: read the body, answer a canned completion."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": COMPLETION})


# ---- processes ---------------------------------------------------------------------------------


@contextmanager
def targets():
    """Start redis-server, the upstream and both gateways; yield {target: base URL}."""
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        raise SystemExit("redis-server is not on PATH (apt-get install redis-server)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPGUARD_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    ports = {name: free_port() for name in (*TARGETS, "redis-server")}
    urls = {name: f"http://127.0.0.1:{ports[name]}" for name in TARGETS}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        stack.enter_context(
            process(
                [
                    redis_server,
                    "--port",
                    str(ports["redis-server"]),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(tmp),
                ],
                redis_answers(ports["redis-server"]),
            )
        )
        stack.enter_context(
            process(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "benchmarks.state:upstream_app",
                    "--port",
                    str(ports["direct"]),
                    "--log-level",
                    "warning",
                    "--no-access-log",
                    "--lifespan",
                    "off",
                ],
                answers(urls["direct"]),
                env,
            )
        )
        for backend in ("memory", "redis"):
            config = tmp / f"{backend}.yaml"
            config.write_text(
                f"upstream:\n  base_url: {urls['direct']}/v1\n"
                f"state:\n  backend: {backend}\n  url: redis://127.0.0.1:{ports['redis-server']}/0\n"
            )
            stack.enter_context(
                process(
                    [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(ports[backend])],
                    answers(urls[backend] + "/healthz"),
                    env,
                )
            )
        yield urls


# ---- latency -----------------------------------------------------------------------------------

HEADERS = {
    "content-type": "application/json",
    "authorization": "Bearer sk-bench-not-a-key",
    "x-loopguard-session": "bench-session-1",
}


def latency(urls: dict[str, str], body: bytes, n: int, warmup: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in TARGETS}
    with clients(urls) as pool:
        for round_, name in interleaved(TARGETS, warmup + n):
            started = time.perf_counter()
            response = pool[name].post("/v1/chat/completions", content=body, headers=HEADERS)
            elapsed = time.perf_counter() - started
            if response.status_code != 200 or response.headers.get("x-loopguard-action", "pass") != "pass":
                raise RuntimeError(f"{name}: HTTP {response.status_code} {response.text[:200]}")
            if round_ >= warmup:
                samples[name].append(elapsed)
    return samples


def summarize(samples: dict[str, list[float]]) -> dict:
    out = {}
    for q in (50, 99):
        p = {name: percentile(values, q) * 1000 for name, values in samples.items()}
        memory, redis = p["memory"] - p["direct"], p["redis"] - p["direct"]
        out[f"p{q}"] = {
            "direct_ms": p["direct"],
            "memory_added_ms": memory,
            "redis_added_ms": redis,
            "redis_minus_memory_ms": redis - memory,
            "ratio": redis / memory if memory > 0 else float("inf"),
        }
    return out


# ---- memory per session ------------------------------------------------------------------------


def session_memory(sessions: int, with_veto: bool) -> float:
    """Bytes per session held by a full MemoryStore (tracemalloc, after the store is filled)."""
    call = ToolCall("call_abc123", "read_file", '{"path": "src/worker/pool.py", "offset": 0, "limit": 200}')
    observation = (
        "[loopguard] This `read_file` call was rejected and not executed: it continues a loop "
        "(no progress, 4 times). Do not repeat it: try a different approach."
    )

    async def fill(store: MemoryStore) -> None:
        for i in range(sessions):
            session = f"h:{hashlib.md5(str(i).encode()).hexdigest()}"  # a uuid-sized header value
            digest = hashlib.blake2b(str(i).encode(), digest_size=16).hexdigest()
            await store.session_state(session, HistoryMark(60 + i % 40, digest))  # what a request leaves
            if with_veto:
                exchange = (replies.assistant_message_for([call]), replies.veto_observation(call, observation))
                anchor = hashlib.blake2b(str(i).encode(), digest_size=16).hexdigest()
                await store.add_veto(session, VetoRecord(59, anchor, exchange))

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    store = MemoryStore(max_sessions=sessions, ttl_s=3600)
    asyncio.run(fill(store))
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert len(store) == sessions and store.evictions == 0
    used = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return used / sessions


# ---- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=300, help="measured requests per target")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    payload = conversation()
    body = orjson.dumps(payload)
    results = {
        "n": args.n,
        "warmup": args.warmup,
        "messages": len(payload["messages"]),
        "body_bytes": len(body),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
    }
    with targets() as urls:
        results["latency"] = summarize(latency(urls, body, args.n, args.warmup))
    results["memory_per_session_bytes"] = {
        "mark_only": session_memory(args.sessions, False),
        "mark_and_one_veto": session_memory(args.sessions, True),
    }
    results["sessions"] = args.sessions

    print(
        f"body: {results['messages']} messages, {results['body_bytes']} bytes; n={args.n} "
        f"(+{args.warmup} warmup) per target, interleaved; {os.cpu_count()} CPUs"
    )
    print("| | direct (ms) | memory added (ms) | redis added (ms) | redis - memory (ms) | redis / memory |")
    print("|---|---|---|---|---|---|")
    for q, r in results["latency"].items():
        print(
            f"| {q} | {r['direct_ms']:.2f} | {r['memory_added_ms']:.2f} | {r['redis_added_ms']:.2f} "
            f"| {r['redis_minus_memory_ms']:.2f} | {r['ratio']:.2f} |"
        )
    per = results["memory_per_session_bytes"]
    print(
        f"in-memory store, {args.sessions:,} sessions: {per['mark_only']:.0f} B/session with a history mark, "
        f"{per['mark_and_one_veto']:.0f} B/session with a mark and one vetoed exchange"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
