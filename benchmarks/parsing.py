"""Reading a growing conversation's bodies: parsed whole on every request, or by what each adds.

An agent's run sends its whole history on every request, two messages longer each time. Per
history length, the same sequence of bodies (a call and its result added per request) is read
both ways in one run: ``codec.loads`` on every body, and ``GrownBodies.loads`` (only the new
messages and the fields after them). Time per body, median of rounds.

    python benchmarks/parsing.py [--lengths 20 100 400] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.overhead import conversation
from gateway.protocols.grown import GrownBodies
from gateway.wire import codec


def growing(length: int, steps: int = 10) -> list[bytes]:
    """The bodies of the last ``steps`` requests of a run that reaches ``length`` messages."""
    full = conversation(length)
    start = max(2, length - 2 * steps)
    return [orjson.dumps({**full, "messages": full["messages"][:n]}) for n in range(start, length + 1, 2)]


def per_body(read, bodies: list[bytes]) -> float:
    started = time.perf_counter()
    for body in bodies:
        read(body)
    return (time.perf_counter() - started) / len(bodies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 100, 400])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| messages | body KB | parsed whole (us) | by what it adds (us) | ratio |")
    print("|---|---|---|---|---|")
    for length in args.lengths:
        bodies = growing(length)
        whole, grown = [], []
        for _ in range(args.rounds):
            whole.append(per_body(codec.loads, bodies))
            cache = GrownBodies()
            cache.loads(bodies[0], "messages")  # the run's earlier requests were read already
            grown.append(per_body(lambda body: cache.loads(body, "messages"), bodies[1:]))
        w, g = statistics.median(whole) * 1e6, statistics.median(grown) * 1e6
        print(f"| {length} | {len(bodies[-1]) / 1024:.0f} | {w:.1f} | {g:.1f} | {g / w:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
