"""What LoopGuard's guardrail adds inside a LiteLLM proxy.

    python benchmarks/litellm_guardrail.py            # n=200 per target and mode, ~3 minutes
    python benchmarks/litellm_guardrail.py -n 500

Two LiteLLM proxies (``litellm --config``) in front of the overhead benchmark's canned upstream,
one without guardrails and one with ``LoopGuardrail`` (mode pre_call + post_call, the shipped
default policy), both with the overhead benchmark's loop-free 60-message agent history. Requests
alternate between the two, one at a time, each timed to its last byte; the guardrail's cost is
the difference at p50 and p99.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.harness import ROOT, answers, free_port, percentile, process
from benchmarks.overhead import conversation

KEY = "sk-loopguard-bench-0f4c2a9e7b1d5f3a8c6e0b2d4f6a8c1e"
MODEL = "bench-model"
TARGETS = ("litellm", "litellm+loopguard")


def _config(upstream: str, guarded: bool) -> dict:
    config = {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {"model": f"openai/{MODEL}", "api_base": upstream + "/v1", "api_key": "sk-upstream"},
            }
        ],
        "litellm_settings": {"telemetry": False, "num_retries": 0},
        "general_settings": {"master_key": KEY},
    }
    if guarded:
        config["guardrails"] = [
            {
                "guardrail_name": "loopguard",
                "litellm_params": {
                    "guardrail": "gateway.integrations.litellm.LoopGuardrail",
                    "mode": ["pre_call", "post_call"],
                    "default_on": True,
                    "loopguard_policy": "default",
                },
            }
        ]
    return config


@contextmanager
def _proxy(config: dict, workdir: Path, env: dict[str, str]) -> Iterator[str]:
    path = workdir / f"litellm-{free_port()}.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    litellm = shutil.which("litellm", path=str(Path(sys.executable).parent)) or "litellm"
    child = subprocess.Popen(
        [litellm, "--config", str(path), "--host", "127.0.0.1", "--port", str(port)],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # the proxy imports for a while
        while not answers(url + "/health/liveliness")():
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"litellm did not start ({child.poll()})")
            time.sleep(0.2)
        yield url
    finally:
        child.terminate()
        child.wait(timeout=15)


@contextmanager
def targets() -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPGUARD_")}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_LOG="ERROR",
    )
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        stack.enter_context(
            process(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "benchmarks.overhead:upstream_app",
                    "--port",
                    str(port),
                    "--log-level",
                    "warning",
                    "--no-access-log",
                    "--lifespan",
                    "off",
                ],
                answers(upstream + "/v1/models"),
                env,
            )
        )
        yield {
            name: stack.enter_context(_proxy(_config(upstream, guarded), workdir, env))
            for name, guarded in zip(TARGETS, (False, True), strict=True)
        }


def latency(urls: dict[str, str], body: bytes, n: int, warmup: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in urls}
    headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}
    clients = {name: httpx.Client(base_url=url, timeout=60) for name, url in urls.items()}
    for i in range(warmup + n):
        order = list(urls) if i % 2 == 0 else list(reversed(urls))
        for name in order:
            started = time.perf_counter()
            with clients[name].stream("POST", "/v1/chat/completions", content=body, headers=headers) as response:
                for _ in response.iter_raw():
                    pass
            if response.status_code != 200:
                raise RuntimeError(f"{name}: HTTP {response.status_code}")
            if i >= warmup:
                samples[name].append(time.perf_counter() - started)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args(argv)
    with targets() as urls:
        print("| mode | litellm p50 / p99 (ms) | + loopguard p50 / p99 (ms) | added p50 / p99 (ms) |")
        print("|---|---|---|---|")
        for mode in ("unary", "stream"):
            body = {**conversation(), "model": MODEL, "stream": mode == "stream"}
            samples = latency(urls, orjson.dumps(body), args.n, args.warmup)
            base, guarded = (samples[t] for t in TARGETS)
            row = [percentile(s, q) * 1000 for s in (base, guarded) for q in (50, 99)]
            print(
                f"| {mode} | {row[0]:.1f} / {row[1]:.1f} | {row[2]:.1f} / {row[3]:.1f} | "
                f"{row[2] - row[0]:+.1f} / {row[3] - row[1]:+.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
