"""Caches are bounded in bytes: large distinct tool arguments cannot grow the gateway's memory
without limit (they once took it from 57 MB to 1.85 GB). Measured on the real child process."""

from __future__ import annotations

import json
import re

import httpx
from support.looping import RespondingUpstream
from support.memory import forgetful_upstream, rss_bytes, send_big_writes
from support.policies import ladder_policy
from support.process import child_env, free_port, gateway_process
from support.scrape import series
from support.servers import serve
from support.upstream import Reply
from support.waiting import wait_for

# 500 distinct 256 KB arguments (125 MB of text) keep this under a minute in CI and still fail
# without byte bounds (the argument memo alone would keep all of it); the 1,500 and 7,000 runs
# are `python benchmarks/soak_memory.py`.
DISTINCT = 500
MAX_GROWTH = 150 * 1024 * 1024


def test_rss_stays_bounded_while_distinct_256_kb_arguments_pass(tmp_path):
    with serve(forgetful_upstream(), http="httptools") as upstream_url:
        config = tmp_path / "gw.yaml"
        config.write_text(f"upstream:\n  base_url: {upstream_url}/v1\nlogging:\n  level: warning\n")
        port = free_port()
        with gateway_process(
            ["serve", "--config", str(config), "--port", str(port)], port, tmp_path / "stderr.log", env=child_env()
        ) as gw:
            send_big_writes(gw.url, 0, 30)  # warm up: imports, pools, first allocations
            before = rss_bytes(gw.process.pid)
            send_big_writes(gw.url, 30, DISTINCT)
            after = rss_bytes(gw.process.pid)
    growth = after - before
    print(f"rss before={before / 2**20:.0f} MiB after={after / 2**20:.0f} MiB growth={growth / 2**20:.0f} MiB")
    assert growth <= MAX_GROWTH, f"RSS grew by {growth / 2**20:.0f} MiB"


def _repeating(request: dict) -> Reply:
    """Proposes again the last call it made, arguments and all (a loop over one big write)."""
    call = next(m for m in reversed(request["messages"]) if m.get("tool_calls"))["tool_calls"][0]["function"]
    return Reply(tool_calls=[(call["name"], call["arguments"])])


def _vetoed_big_write(i: int) -> dict:
    args = json.dumps({"path": f"out/{i}.txt", "content": f"{i:08d}" * 6400})  # ~50 KB, distinct
    messages = [{"role": "user", "content": f"write file {i}"}]
    for n in range(3):
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{n}", "type": "function", "function": {"name": "write_file", "arguments": args}}
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{n}", "content": "written"},
        ]
    return {"model": "m", "messages": messages}


def _gauge(url: str, name: str) -> float:
    found = series(url, name)
    return found if found is not None else -1.0


def test_vetoed_exchanges_are_bounded_in_bytes_and_given_back_when_idle(child_gateway):
    """Each vetoed call of a 50 KB write is kept as ~2 KB, all of them within the byte budget,
    and swept once idle past the TTL."""
    budget = 256 * 1024
    upstream = RespondingUpstream(_repeating)
    with serve(upstream.app) as upstream_url:
        child = child_gateway(upstream_url, ladder_policy(), state={"max_veto_bytes": budget, "ttl_s": 2})
        before = rss_bytes(child.pid)
        with httpx.Client(base_url=child.url, timeout=30) as client:
            for i in range(300):
                response = client.post(
                    "/v1/chat/completions", json=_vetoed_big_write(i), headers={"x-loopguard-session": f"s{i}"}
                )
                assert response.status_code == 200
                assert _gauge(child.url, "loopguard_state_veto_bytes") <= budget if i % 50 == 0 else True
        held = _gauge(child.url, "loopguard_state_veto_bytes")
        sessions = _gauge(child.url, "loopguard_state_sessions")
        peak = rss_bytes(child.pid)
        assert 0 < held <= budget
        # nothing kept of the 50 KB but its head: a few KB per vetoed exchange
        assert held / min(sessions, 300) < 16 * 1024, (held, sessions)
        assert wait_for(lambda: _gauge(child.url, "loopguard_state_sessions") == 0, timeout=30)
        assert wait_for(lambda: rss_bytes(child.pid) < peak - (peak - before) // 2, timeout=30)  # given back
        assert _gauge(child.url, "loopguard_state_veto_bytes") == 0
        after = rss_bytes(child.pid)
    print(f"rss before={before / 2**20:.0f} MiB peak={peak / 2**20:.0f} MiB after={after / 2**20:.0f} MiB")
