"""A closed-loop HTTP/1.1 load generator in its own process, cheap enough not to be the
bottleneck: raw asyncio streams on uvloop, keep-alive connections, one request in flight each.

    python benchmarks/loadgen.py http://127.0.0.1:8080 body.json --concurrency 32 --seconds 5

Prints one JSON line: requests/s and p50/p99 latency (ms) of the 200 answers, the count of any
other answers by status, and this process's own CPU time per request.
httpx's async client tops out near 100 req/s per process on a small machine, so it would
measure itself instead of the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

PATH = "/v1/chat/completions"


async def run(url: str, body: bytes, concurrency: int, seconds: float, warmup: float) -> dict:
    host, port = url.removeprefix("http://").split(":")
    request = (
        b"POST %s HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
        b"authorization: Bearer sk-bench-not-a-key\r\ncontent-length: %d\r\n\r\n"
        % (PATH.encode(), host.encode(), len(body))
    ) + body
    latencies: list[float] = []
    errors: dict[str, int] = {}  # status (or "---": connection dropped) -> count
    total = 0  # warmup included: what the server's CPU time is divided by
    counting, stop = False, time.perf_counter() + warmup

    async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        """One request, read to its last byte; returns the status."""
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        lower = head.lower()
        at = lower.find(b"\r\ncontent-length:")
        if at >= 0:
            end = lower.index(b"\r\n", at + 2)
            await reader.readexactly(int(lower[at + 17 : end]))
        else:  # chunked
            while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                await reader.readexactly(size + 2)
            await reader.readexactly(2)
        return head[9:12]

    async def worker() -> None:
        nonlocal total
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while time.perf_counter() < stop:
                started = time.perf_counter()
                try:
                    status = await exchange(reader, writer)
                except (OSError, asyncio.IncompleteReadError):  # dropped: count it, reconnect
                    status = b"---"
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, int(port))
                total += 1
                if counting:
                    if status == b"200":
                        latencies.append(time.perf_counter() - started)
                    else:
                        errors[status.decode()] = errors.get(status.decode(), 0) + 1
        finally:
            writer.close()

    if warmup > 0:  # warm the pools and caches of the target
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    counting, started, cpu_started = True, time.perf_counter(), time.process_time()
    stop = started + seconds
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": pick(0.5),
        "p99_ms": pick(0.99),
        "n": len(latencies),
        "total": total,
        "loadgen_cpu_ms": cpu * 1000 / max(1, len(latencies) + sum(errors.values())),
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("body", type=Path)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    args = parser.parse_args()
    coro = run(args.url, args.body.read_bytes(), args.concurrency, args.seconds, args.warmup)
    try:
        import uvloop

        result = uvloop.run(coro)
    except ImportError:
        result = asyncio.run(coro)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
