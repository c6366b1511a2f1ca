"""What a signed Bedrock request adds, next to an Anthropic request through the same gateway.

One canned upstream answers both Anthropic's ``POST /v1/messages`` and Bedrock's
``POST /model/{model}/invoke`` with the same message (a tool call the gateway judges); one
gateway (shipped default policy, JSON info logs to a file) fronts both, holding AWS credentials
in its environment, so every Bedrock request is signed (SigV4, botocore) on its way. Three
targets, requests interleaved round-robin one at a time as ``overhead.py`` sends them:

- ``direct``: the upstream itself (the floor both added latencies are measured from);
- ``anthropic``: ``/v1/messages`` through the gateway, a client key forwarded, nothing signed;
- ``bedrock``: ``/bedrock/model/{model}/invoke`` through the gateway, unsigned by the client
  (Claude Code's ``CLAUDE_CODE_SKIP_BEDROCK_AUTH``), signed by the gateway.

The same 60-message agent history in both shapes (~24 KB). Reported: added p50/p99 of each and
the ratio bedrock / anthropic (the bar: within the existing hop bar, 1.3), the upstream's count
of requests against the requests sent (signing takes no round trip of its own), and the signer's
own time per request measured in process.

    python benchmarks/bedrock_signing.py -n 1000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, answers, free_port, interleaved, percentile, process

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
_COUNT = {"requests": 0}
_REPLY = orjson.dumps(
    {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "tool_use", "id": "toolu_new", "name": "run_tests", "input": {"path": "tests/"}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 6000, "output_tokens": 20},
    }
)


async def upstream_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The canned model: any POST gets the message; ``GET /count`` the POSTs it has served."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    if scope["method"] == "GET":
        body = orjson.dumps(_COUNT)
    else:
        _COUNT["requests"] += 1
        body = _REPLY
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def history() -> list[dict[str, Any]]:
    """A loop-free agent history: the task, then 29 tool calls over 6 tools with their results."""
    tools = ["read_file", "grep", "run_tests", "list_dir", "edit_file", "git_diff"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test in the parser module."}]
    for step in range(29):
        ident = f"toolu_{step:04d}"
        call = {"type": "tool_use", "id": ident, "name": tools[step % 6], "input": {"path": f"src/mod{step}.py"}}
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {step}."}, call]})
        result = f"line {step}: " + "content of the file, unchanged. " * 18
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": ident, "content": result}]})
    return messages


TOOLS = [
    {
        "name": n,
        "description": f"{n} tool",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for n in ["read_file", "grep", "run_tests", "list_dir", "edit_file", "git_diff"]
]


def bodies() -> dict[str, bytes]:
    common = {"max_tokens": 1024, "system": "You are a coding agent.", "messages": history(), "tools": TOOLS}
    return {
        "anthropic": orjson.dumps({"model": MODEL, **common}),
        "bedrock": orjson.dumps({"anthropic_version": "bedrock-2023-05-31", **common}),
    }


def requests_of(urls: dict[str, str]) -> dict[str, tuple[str, bytes, dict[str, str]]]:
    """Each target's (URL, body, headers)."""
    body = bodies()
    key = {"x-api-key": "sk-ant-bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    plain = {"content-type": "application/json"}
    return {
        "direct": (f"{urls['direct']}/model/{MODEL}/invoke", body["bedrock"], plain),
        "anthropic": (f"{urls['gateway']}/v1/messages", body["anthropic"], key),
        "bedrock": (f"{urls['gateway']}/bedrock/model/{MODEL}/invoke", body["bedrock"], plain),
    }


def start(stack: ExitStack, logs: Path) -> dict[str, str]:
    urls = {name: f"http://127.0.0.1:{free_port()}" for name in ("direct", "gateway")}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPGUARD_", "AWS_"))}
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    direct_port = urls["direct"].rsplit(":", 1)[1]
    stack.enter_context(
        process(
            [sys.executable, "-m", "uvicorn", "benchmarks.bedrock_signing:upstream_app", "--port", direct_port]
            + ["--loop", "uvloop", "--http", "httptools", "--log-level", "warning", "--no-access-log"]
            + ["--lifespan", "off"],
            answers(urls["direct"] + "/count"),
            {**env, "PYTHONPATH": str(ROOT)},
        )
    )
    config = folder / "gateway.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "upstream": {
                    "base_url": "http://127.0.0.1:9/v1",
                    "anthropic_base_url": urls["direct"],
                    "bedrock_base_url": urls["direct"],
                    "bedrock_region": "us-east-1",
                },
                "logging": {"format": "json", "level": "info"},
            }
        )
    )
    aws = {
        "AWS_ACCESS_KEY_ID": "AKIDBENCHMARK",
        "AWS_SECRET_ACCESS_KEY": "benchmark/secret/key",
        "AWS_CONFIG_FILE": str(folder / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(folder / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    gateway_port = urls["gateway"].rsplit(":", 1)[1]
    stack.enter_context(
        process(
            [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", gateway_port],
            answers(urls["gateway"] + "/healthz"),
            {**env, **aws, "PYTHONPATH": str(ROOT)},
            stderr=logs / "gateway.log",
        )
    )
    return urls


def measure(urls: dict[str, str], n: int, warmup: int) -> tuple[dict[str, list[float]], int, int]:
    """Each target's latencies (to the last byte), and (requests the upstream served, sent)."""
    targets = requests_of(urls)
    samples: dict[str, list[float]] = {name: [] for name in targets}
    sent = 0
    with httpx.Client(timeout=60) as client:
        before = client.get(urls["direct"] + "/count").json()["requests"]
        for round_, name in interleaved(list(targets), warmup + n):
            url, body, headers = targets[name]
            began = time.perf_counter()
            answer = client.post(url, content=body, headers=headers)
            elapsed = time.perf_counter() - began
            if answer.status_code != 200:
                raise RuntimeError(f"{name}: {answer.status_code} {answer.text[:200]}")
            sent += 1
            if round_ >= warmup:
                samples[name].append(elapsed)
        served = client.get(urls["direct"] + "/count").json()["requests"] - before
    return samples, served, sent


def signing_time(rounds: int = 2000) -> float:
    """The signer's own time for one request of this body (seconds), in process."""
    from botocore.credentials import Credentials

    sys.path.insert(0, str(ROOT))  # this tree's gateway, not an installed one
    from gateway.upstream.base import UpstreamRequest
    from gateway.upstream.signing import ProviderSettings
    from gateway.upstream.sigv4 import SigV4Signer

    signer = SigV4Signer(ProviderSettings("bedrock", "https://x", None, {"region": "us-east-1"}), "bedrock")
    frozen = Credentials("AKIDBENCHMARK", "benchmark/secret/key").get_frozen_credentials()
    request = UpstreamRequest(
        "POST", f"/model/{MODEL}/invoke", b"", [(b"content-type", b"application/json")], bodies()["bedrock"]
    )
    url = f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{MODEL}/invoke"
    began = time.perf_counter()
    for _ in range(rounds):
        signer.signed(request, url, frozen)
    return (time.perf_counter() - began) / rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="measured requests per target")
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        urls = start(stack, logs)
        samples, served, sent = measure(urls, args.n, args.warmup)
    ms = {name: {q: percentile(values, q) * 1000 for q in (50, 99)} for name, values in samples.items()}
    print(f"{args.n} requests per target, {args.warmup} warm-up rounds; body {len(bodies()['bedrock'])} bytes")
    print("| target | p50 ms | p99 ms | added p50 ms | added p99 ms |")
    print("|---|---|---|---|---|")
    added = {}
    for name, p in ms.items():
        added[name] = {q: p[q] - ms["direct"][q] for q in (50, 99)}
        extra = "" if name == "direct" else f" {added[name][50]:.2f} | {added[name][99]:.2f} |"
        print(f"| {name} | {p[50]:.2f} | {p[99]:.2f} |" + (extra or " - | - |"))
    for q in (50, 99):
        print(f"added p{q} bedrock / anthropic: {added['bedrock'][q] / added['anthropic'][q]:.2f}")
    print(f"upstream served {served} requests for {sent} sent (no extra round trips: {served == sent})")
    print(f"signing one request in process: {signing_time() * 1e6:.0f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
