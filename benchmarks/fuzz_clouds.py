"""Fuzz every cloud route through a real gateway and count what must never happen.

Each request is an agent's 5th identical call on one generate route of one protocol or cloud
(OpenAI, Anthropic, Gemini, Azure OpenAI, Bedrock InvokeModel, Converse and its OpenAI-compatible
APIs, Vertex Gemini, Anthropic and chat), sent over a bare socket to a gateway whose every
provider is a scripted cloud (``tests/support/looping_cloud.py``) that answers the looping call.
One of four kinds, at random (reproducible by ``--seed``):

- ``spelling``: the route's path spelt another way (escapes once and twice, case, ``? # ;``,
  dot and empty segments, control characters, anywhere in it);
- ``body``: one value of the request body, at any depth, of another JSON type (or gone);
- ``fault``: the cloud's answer broken one of ~40 ways (cut, mislabelled, a success that is no
  200, frames botocore refuses, indexes that are no integer, fields of the wrong type, events a
  lenient SDK reads, a silent or dropped connection; ``tests/support/cloud_faults.py``);
- ``query``: odd query strings (non-UTF-8 escapes, Google's ``alt`` spelt every way) and
  ``Expect: 100-continue``.

Counted, each must be 0: a 5xx of the gateway's own (a 500, or a 5xx that names no upstream
failure), an unjudged delivery (the looping call in a success, as the client's SDK assembles it),
a fail-open (``loopguard_fail_open_errors`` moved), a stream that does not end as its protocol's
streams end, a request that hangs.

    python benchmarks/fuzz_clouds.py --requests 20000 --seed 1 [--kinds spelling,body,fault,query] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default="spelling,body,fault,query")
    parser.add_argument("--json", type=Path, help="write the tally here too")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this tree's gateway and test support
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    from support.fuzz_clouds import fuzz

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tally = fuzz(args.requests, args.seed, Path(tmp), tuple(args.kinds.split(",")))
    summary = {**tally.summary(), "seconds": round(time.monotonic() - started, 1), "seed": args.seed}
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 1 if tally.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
