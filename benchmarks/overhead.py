"""What the gateway adds to a chat request, next to the floor of any Python hop.

Three targets in front of one fast canned upstream, each a separate uvicorn process
(uvloop + httptools):

* direct  - the upstream itself;
* relay   - benchmarks/relay.py, a bare starlette + httpx relay: the least a Python hop costs;
* gateway - ``python -m gateway serve`` with the shipped default policy and the default JSON
            info logging operators run (written to /dev/null, so the cost of producing each
            line is counted, not the terminal's).

Latency: closed loop, one request at a time, the targets interleaved round-robin (the starting
target rotates every round) so machine noise lands on all three alike. The body is a realistic,
loop-free agent history: 60 messages with ~20 KB of tool calls and results; the "looping"
modes end the same history in a 3-repeat loop, so the default policy injects a warning. Added latency is
p(target) - p(direct) at p50 and p99; the target is gateway_added <= 1.3 x relay_added.
Throughput: requests/s with 32 concurrent clients for relay and gateway.

    python benchmarks/overhead.py [-n 300] [--warmup 30] [--json results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when uvicorn imports this module

from harness import ROOT, answers, free_port, percentile, process  # noqa: E402

TARGETS = ("direct", "relay", "gateway")

# ---- the canned upstream ------------------------------------------------------------------------

TOOLS = ["read_file", "grep", "run_command", "list_dir", "edit_file", "search_web"]


def conversation(messages: int = 60) -> dict:
    """A loop-free agent history: every call different, tools varied, results of real size."""
    def args(i: int) -> dict:
        return [
            {"path": f"src/pkg{i}/module_{i * 7 % 13}.py", "offset": i * 40, "limit": 200},
            {"pattern": f"def handler_{i}\\(|class Worker{i}", "path": f"lib/area{i % 5}", "glob": "*.py"},
            {"command": f"pytest tests/unit/test_feature_{i}.py -q -x --maxfail={i % 3 + 1}", "timeout": 120},
            {"path": f"assets/bundle-{i}/", "depth": i % 3 + 1, "show_hidden": i % 2 == 0},
            {"path": f"src/pkg{i}/config_{i}.toml", "old": f"retries = {i}", "new": f"retries = {i + 1}"},
            {"query": f"python asyncio cancellation semantics issue {1000 + i}", "max_results": 5},
        ][i % len(TOOLS)]

    def result(i: int) -> str:
        lines = [f"{i:04d}:{j:03d} " + f"value_{i * 31 + j} = compute(item_{j}, scale={i}.{j}) # note {i * j}"
                 for j in range(8)]
        return "\n".join(lines)

    history: list[dict] = [
        {"role": "system", "content": "You are a careful coding agent. " * 40},
        {"role": "user", "content": "Refactor the worker pool so retries are configurable, then run the tests."},
    ]
    i = 0
    while len(history) < messages:
        call_id = f"call_{i:04d}"
        history.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": TOOLS[i % len(TOOLS)], "arguments": json.dumps(args(i))}}]})
        history.append({"role": "tool", "tool_call_id": call_id, "content": result(i)})
        i += 1
    tools = [{"type": "function", "function": {"name": name, "description": f"The {name} tool.",
                                               "parameters": {"type": "object", "properties": {}}}}
             for name in TOOLS]
    return {"model": "gpt-4o-mini", "messages": history[:messages], "tools": tools, "temperature": 0}


def looping(messages: int = 60) -> dict:
    """The same history ending in a loop: the last three rounds repeat one call with one result,
    so the default policy injects a warning (the body is rewritten and re-serialized)."""
    body = conversation(messages - 6)
    for k in range(3):
        call_id = f"call_loop_{k}"
        body["messages"].append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "run_command", "arguments": '{"command": "pytest tests/unit -q"}'}}]})
        body["messages"].append({"role": "tool", "tool_call_id": call_id,
                                 "content": "FAILED tests/unit/test_pool.py::test_retry - AssertionError"})
    return body


def _completion() -> bytes:
    call = {"id": "call_next", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "README.md", "offset": 0, "limit": 50}'}}
    return orjson.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Reading the README first.",
                                             "tool_calls": [call]},
                     "logprobs": None, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 5200, "completion_tokens": 40, "total_tokens": 5240}})


def _stream() -> list[bytes]:
    env = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o-mini"}

    def event(delta: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return b"data: " + orjson.dumps({**env, "choices": [choice]}) + b"\n\n"

    text = "Reading the README first, then the worker pool module."
    args = '{"path": "README.md", "offset": 0, "limit": 50}'
    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": text[i:i + 6]}) for i in range(0, len(text), 6)]
    events.append(event({"tool_calls": [{"index": 0, "id": "call_next", "type": "function",
                                         "function": {"name": "read_file", "arguments": ""}}]}))
    events += [event({"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 8]}}]})
               for i in range(0, len(args), 8)]
    events.append(event({}, "tool_calls"))
    return [*events, b"data: [DONE]\n\n"]


COMPLETION, STREAM = _completion(), _stream()
_JSON_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(COMPLETION)).encode())]
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


async def upstream_app(scope, receive, send):
    """As fast as an ASGI app gets: read the body, answer a canned completion or SSE stream."""
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    if scope["path"].endswith("/models"):
        await send({"type": "http.response.start", "status": 200, "headers": _JSON_HEADERS[:1]})
        await send({"type": "http.response.body", "body": b'{"object":"list","data":[]}'})
        return
    if orjson.loads(body).get("stream"):
        await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        for event in STREAM:  # one write per event, as a model streams them
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    else:
        await send({"type": "http.response.start", "status": 200, "headers": _JSON_HEADERS})
        await send({"type": "http.response.body", "body": COMPLETION})


# ---- processes ----------------------------------------------------------------------------------

@contextmanager
def targets():
    """Start upstream, relay and gateway; yield {name: base URL}."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env = {k: v for k, v in env.items() if not k.startswith("LOOPGUARD_")}
    ports = {name: free_port() for name in TARGETS}
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        config = tmp / "gateway.yaml"
        config.write_text(f"upstream:\n  base_url: {urls['direct']}/v1\nlogging:\n  format: json\n  level: info\n")
        stack.enter_context(process(
            [sys.executable, "-m", "uvicorn", "benchmarks.overhead:upstream_app", "--port", str(ports["direct"]),
             "--loop", "uvloop", "--http", "httptools", "--log-level", "warning", "--no-access-log",
             "--lifespan", "off"], answers(urls["direct"] + "/v1/models"), env))
        stack.enter_context(process(
            [sys.executable, str(ROOT / "benchmarks/relay.py"), "--port", str(ports["relay"]),
             "--upstream", urls["direct"]], answers(urls["relay"] + "/v1/models"), env))
        stack.enter_context(process(
            [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(ports["gateway"])],
            answers(urls["gateway"] + "/healthz"), env))
        yield urls


# ---- measuring ----------------------------------------------------------------------------------

HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench-not-a-key"}


def one(client: httpx.Client, body: bytes) -> tuple[float, str | None]:
    """One request, read to its last byte (a stream's [DONE] included)."""
    started = time.perf_counter()
    with client.stream("POST", "/v1/chat/completions", content=body, headers=HEADERS) as response:
        for _ in response.iter_raw():
            pass
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"{client.base_url}: HTTP {response.status_code}")
    return elapsed, response.headers.get("x-loopguard-action")


def latency(urls: dict[str, str], body: bytes, n: int, warmup: int, expect: str = "pass") -> tuple[dict, int]:
    samples: dict[str, list[float]] = {name: [] for name in TARGETS}
    not_pass = 0
    clients = {name: httpx.Client(base_url=url, timeout=60) for name, url in urls.items()}
    try:
        for round_ in range(warmup + n):
            shift = round_ % len(TARGETS)
            for name in TARGETS[shift:] + TARGETS[:shift]:
                elapsed, action = one(clients[name], body)
                if name == "gateway" and action != expect:
                    not_pass += 1
                if round_ >= warmup:
                    samples[name].append(elapsed)
    finally:
        for client in clients.values():
            client.close()
    return samples, not_pass


async def throughput(url: str, body: bytes, concurrency: int, seconds: float) -> float:
    """Requests/s of ``concurrency`` keep-alive connections in a closed loop.

    A raw asyncio HTTP/1.1 client, not httpx: httpx's async client tops out near 100 req/s per
    process on a small machine, so it would measure itself instead of the server.
    """
    host, port = url.removeprefix("http://").split(":")
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
               b"authorization: Bearer sk-bench-not-a-key\r\ncontent-length: %d\r\n\r\n"
               % (host.encode(), len(body))) + body
    done, counting, stop = 0, False, 0.0

    async def worker() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while time.perf_counter() < stop:
                writer.write(request)
                head = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
                if head[0].split()[1] != b"200":
                    raise RuntimeError(f"{url}: {head[0]!r}")
                fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in head[1:] if line)}
                if b"content-length" in fields:
                    await reader.readexactly(int(fields[b"content-length"]))
                else:  # chunked
                    while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                        await reader.readexactly(size + 2)
                    await reader.readexactly(2)
                done += counting
        finally:
            writer.close()

    stop = time.perf_counter() + min(1.0, seconds / 3)  # warm the pools
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    counting, started = True, time.perf_counter()
    stop = started + seconds
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - started)


def summarize(samples: dict[str, list[float]]) -> dict:
    out = {}
    for q in (50, 99):
        p = {name: percentile(values, q) * 1000 for name, values in samples.items()}
        relay_added, gateway_added = p["relay"] - p["direct"], p["gateway"] - p["direct"]
        out[f"p{q}"] = {"direct_ms": p["direct"], "relay_ms": p["relay"], "gateway_ms": p["gateway"],
                        "relay_added_ms": relay_added, "gateway_added_ms": gateway_added,
                        "ratio": gateway_added / relay_added if relay_added > 0 else float("inf")}
    return out


def table(results: dict) -> str:
    rows = ["| mode | direct p50 / p99 (ms) | relay added p50 / p99 (ms) | gateway added p50 / p99 (ms) "
            "| ratio p50 / p99 (target <= 1.3) |", "|---|---|---|---|---|"]
    for mode, r in results["latency"].items():
        p50, p99 = r["p50"], r["p99"]
        rows.append(f"| {mode} | {p50['direct_ms']:.2f} / {p99['direct_ms']:.2f} "
                    f"| {p50['relay_added_ms']:.2f} / {p99['relay_added_ms']:.2f} "
                    f"| {p50['gateway_added_ms']:.2f} / {p99['gateway_added_ms']:.2f} "
                    f"| {p50['ratio']:.2f} / {p99['ratio']:.2f} |")
    if results.get("throughput"):
        c = results["concurrency"]
        rows += ["", f"| mode | direct req/s @{c} (reference) | relay req/s @{c} | gateway req/s @{c} "
                     "| gateway / relay |", "|---|---|---|---|---|"]
        for mode, r in results["throughput"].items():
            rows.append(f"| {mode} | {r['direct']:.0f} | {r['relay']:.0f} | {r['gateway']:.0f} "
                        f"| {r['gateway'] / r['relay']:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=300, help="measured requests per target and mode")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each throughput run")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    payload, loop = conversation(), looping()
    bodies = {"unary": orjson.dumps(payload), "stream": orjson.dumps({**payload, "stream": True}),
              "unary, looping (warn)": orjson.dumps(loop), "stream, looping (warn)": orjson.dumps({**loop, "stream": True})}
    results: dict = {"n": args.n, "warmup": args.warmup, "body_bytes": len(bodies["unary"]),
                     "messages": len(payload["messages"]), "concurrency": args.concurrency,
                     "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                 "platform": platform.platform()},
                     "latency": {}, "throughput": {}, "gateway_not_pass": 0}
    with targets() as urls:
        for mode, body in bodies.items():
            expect = "warn" if "looping" in mode else "pass"
            samples, not_pass = latency(urls, body, args.n, args.warmup, expect)
            results["latency"][mode] = summarize(samples)
            results["gateway_not_pass"] += not_pass
        if not args.no_throughput:
            for mode, body in list(bodies.items())[:2]:
                results["throughput"][mode] = {
                    name: asyncio.run(throughput(urls[name], body, args.concurrency, args.seconds))
                    for name in TARGETS}
    print(f"body: {results['messages']} messages, {results['body_bytes']} bytes; "
          f"n={args.n} (+{args.warmup} warmup) per target and mode; {os.cpu_count()} CPUs")
    if results["gateway_not_pass"]:
        print(f"WARNING: {results['gateway_not_pass']} gateway answers had an unexpected action")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
