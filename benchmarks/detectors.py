"""Cost of judging one request: parse the body, build the trace, run every registry detector.

Conversations of 50, 500 and 5,000 messages (half of them tool calls, arguments of 200-2,000
characters, results of 100-4,000: reads, shell commands, edits, writes, searches, some JSON with
volatile fields, some errors, a loop at the end), all in one process. Prints the median per size,
cold (fresh settings: nothing memoized, as for the first request after a restart) and warm (the
steady state: every request re-sends the conversation, whose texts were normalized before), the
growth ratios, and the memory a request's trace and the normalization memo hold.

    python benchmarks/detectors.py [--quick]

``--against PATH`` measures build+detect in this tree and in another source tree (an older
commit: ``git worktree add /tmp/before <commit>``) side by side: each size alternately in a
process of each tree, several rounds, the CPU time per request of the best round of each and
their ratio (a shared machine's noise cancels out of the ratio better than out of two runs).

    python benchmarks/detectors.py --against /tmp/before
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway.detectors import REGISTRY
from gateway.protocols.chat.parse import conversation_from_body
from gateway.trace.builder import build_trace
from gateway.trace.settings import TraceSettings

SIZES = (50, 500, 5000)
WORDS = [
    "def",
    "return",
    "self",
    "import",
    "config",
    "value",
    "items",
    "request",
    "response",
    "cache",
    "user",
    "order",
    "handler",
    "result",
    "logger",
    "timeout",
    "index",
    "payload",
    "session",
    "error",
    "retry",
    "client",
    "server",
    "parse",
    "build",
]
DETECTORS = [(d.detect, d.settings()) for d in REGISTRY.values()]


def text(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n]


def lines(rng: random.Random, n: int) -> str:
    return "\n".join(f"{i + 1:6d}\t{text(rng, rng.randint(20, 70))}" for i in range(max(1, n // 50)))


def tool_call(rng: random.Random, i: int) -> tuple[str, dict, str]:
    kind = rng.random()
    path = f"/home/dev/repo/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{i % 97}.py"
    if kind < 0.35:
        return (
            "Read",
            {
                "file_path": path,
                "offset": rng.randint(0, 20) * 100,
                "limit": 200,
                "description": text(rng, rng.randint(150, 400)),
            },
            lines(rng, rng.randint(500, 4000)),
        )
    if kind < 0.6:
        command = f"cd /home/dev/repo && {text(rng, rng.randint(150, 600))}"
        result = (
            json.dumps(
                {
                    "exitCode": rng.choice([0, 0, 1]),
                    "output": text(rng, rng.randint(100, 1500)),
                    "durationMs": rng.randint(1, 9000),
                    "pid": rng.randint(100, 99999),
                }
            )
            if rng.random() < 0.5
            else f"{text(rng, rng.randint(100, 1500))}\nfinished at 2025-03-0{i % 9 + 1}T10:00:00Z in 1.{i % 10}s"
        )
        return "Bash", {"command": command, "description": text(rng, 60), "timeout": 120000}, result
    if kind < 0.8:
        return (
            "Edit",
            {
                "file_path": path,
                "old_string": text(rng, rng.randint(100, 900)),
                "new_string": text(rng, rng.randint(100, 900)),
            },
            f"The file {path} has been updated.",
        )
    if kind < 0.9:
        return (
            "Write",
            {"file_path": path, "content": text(rng, rng.randint(600, 1900))},
            f"File created successfully at: {path}",
        )
    return (
        "Grep",
        {
            "pattern": text(rng, 20),
            "path": "/home/dev/repo",
            "glob": "**/*.py",
            "output_mode": "content",
            "note": text(rng, rng.randint(150, 600)),
        },
        ("Error: invalid regex" if rng.random() < 0.2 else lines(rng, rng.randint(100, 1500))),
    )


def body(n_messages: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    messages: list[dict] = [{"role": "system", "content": text(rng, 2000)}, {"role": "user", "content": "fix the bug"}]
    i = 0
    while len(messages) < n_messages:
        i += 1
        name, args, result = tool_call(rng, i)
        if len(messages) > n_messages - 12:  # end in a loop, so the detectors have work to do
            name, args = (
                "Bash",
                {"command": "cd /home/dev/repo && npm test -- --runInBand", "description": text(rng, 160)},
            )
            result = "1 failed\nexit code 1"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": result})
    tools = [{"type": "function", "function": {"name": n}} for n in ("Read", "Bash", "Edit", "Write", "Grep")]
    return {"model": "m", "messages": messages[:n_messages], "tools": tools}


def build_and_detect(conv, settings: TraceSettings) -> int:
    trace = build_trace(conv, settings)
    return sum(detect(trace, s) is not None for detect, s in DETECTORS)


def judge(payload: dict, settings: TraceSettings) -> int:
    """What a request costs: parse, build, detect."""
    return build_and_detect(conversation_from_body(payload), settings)


def memo_after(payload: dict) -> TraceSettings:
    """Settings (and so a memo) that have normalized this conversation once."""
    settings = TraceSettings()
    judge(payload, settings)
    return settings


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def retained_bytes(fn) -> int:
    gc.collect()
    tracemalloc.start()
    kept = fn()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return current


def main(quick: bool = False) -> None:
    repeats = {50: 200, 500: 60, 5000: 15} if not quick else {50: 20, 500: 10, 5000: 3}
    payloads = {n: body(n) for n in SIZES}
    rows = {}
    for n, payload in payloads.items():
        calls = sum(1 for m in payload["messages"] if m["role"] == "assistant")
        arg_lengths = [
            len(m["tool_calls"][0]["function"]["arguments"]) for m in payload["messages"] if m["role"] == "assistant"
        ]
        warm = TraceSettings()
        judge(payload, warm)
        conv = conversation_from_body(payload)
        trace = build_trace(conv, warm)
        rows[n] = {
            "calls": calls,
            "args": (min(arg_lengths), max(arg_lengths)),
            "build+detect": median_ms(lambda: build_and_detect(conv, warm), repeats[n]),
            "cold": median_ms(lambda: judge(payload, TraceSettings()), max(3, repeats[n] // 5)),
            "warm": median_ms(lambda: judge(payload, warm), repeats[n]),
            "parse": median_ms(lambda: conversation_from_body(payload), repeats[n]),
            "build": median_ms(lambda: build_trace(conv, warm), repeats[n]),
            "detect": median_ms(lambda: [d(trace, s) for d, s in DETECTORS], repeats[n]),
            "events": len(trace.events),
            "trace_bytes": retained_bytes(lambda: build_trace(conv, warm).events),
            "memo_bytes": retained_bytes(lambda: memo_after(payload)),
        }
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
        "build+detect = what the target is about, parse = the protocol adapter, run on every request too"
    )
    print(
        f"{'messages':>8} {'calls':>6} {'args chars':>11} {'cold ms':>8} {'warm ms':>8} "
        f"{'b+d ms':>7} {'parse':>7} {'build':>7} {'detect':>7} {'events':>7} {'trace KB':>9} {'memo KB':>8}"
    )
    for n, r in rows.items():
        print(
            f"{n:>8} {r['calls']:>6} {r['args'][0]:>5}-{r['args'][1]:<5} {r['cold']:>8.2f} {r['warm']:>8.3f} "
            f"{r['build+detect']:>7.3f} {r['parse']:>7.3f} {r['build']:>7.3f} {r['detect']:>7.3f} {r['events']:>7} "
            f"{r['trace_bytes'] / 1024:>9.1f} {r['memo_bytes'] / 1024:>8.1f}"
        )
    for key in ("build+detect", "warm", "cold"):
        print(
            f"ratio {key}: 500/50 = {rows[500][key] / rows[50][key]:.2f}, "
            f"5000/500 = {rows[5000][key] / rows[500][key]:.2f}"
        )
    verdict = "OK" if rows[500]["build+detect"] <= 2.0 else "MISSED"
    print(f"target: trace building + detectors <= 2 ms at 500 messages (warm): {verdict}")


# Run in a process whose working directory is a source tree: that tree's gateway and its own
# copy of this benchmark's conversation, measured the same way (any tree since these functions).
MEASURE = """
import sys, time
sys.path[:0] = ["benchmarks", "."]
from detectors import body, build_and_detect, conversation_from_body, memo_after
size, calls = int(sys.argv[1]), int(sys.argv[2])
payload = body(size)
conv = conversation_from_body(payload)
settings = memo_after(payload)
build_and_detect(conv, settings)
start = time.process_time()
for _ in range(calls):
    build_and_detect(conv, settings)
print((time.process_time() - start) / calls * 1000)
"""


def against(other: Path, rounds: int = 5) -> None:
    """This tree and ``other``, each size measured alternately in a process of each tree."""
    calls = {50: 400, 500: 80, 5000: 8}
    trees = {"this tree": Path(__file__).resolve().parents[1], str(other): other.resolve()}
    best: dict[tuple[str, int], float] = {}
    for _ in range(rounds):
        for size, n in calls.items():
            for name, root in trees.items():
                out = subprocess.run(
                    [sys.executable, "-c", MEASURE, str(size), str(n)],
                    cwd=root,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                ms = float(out.split()[-1])
                best[(name, size)] = min(ms, best.get((name, size), ms))
    print(f"build+detect, CPU ms per request (best of {rounds} rounds), load average {os.getloadavg()[0]:.2f}")
    print(f"{'messages':>8} " + " ".join(f"{name[-24:]:>24}" for name in trees) + f" {'ratio':>7}")
    for size in calls:
        mine, theirs = (best[(name, size)] for name in trees)
        print(f"{size:>8} {mine:>24.3f} {theirs:>24.3f} {mine / theirs:>7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--against", type=Path, metavar="PATH", help="another source tree, side by side")
    options = parser.parse_args()
    if options.against:
        against(options.against)
    else:
        main(quick=options.quick)
