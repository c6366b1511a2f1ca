"""Caches are bounded in bytes: large distinct tool arguments cannot grow the gateway's memory
without limit (they once took it from 57 MB to 1.85 GB). Measured on the real child process."""

from __future__ import annotations

from support.memory import forgetful_upstream, rss_bytes, send_big_writes
from support.process import child_env, free_port, gateway_process
from support.servers import serve

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
        with gateway_process(["serve", "--config", str(config), "--port", str(port)], port,
                             tmp_path / "stderr.log", env=child_env()) as gw:
            send_big_writes(gw.url, 0, 30)  # warm up: imports, pools, first allocations
            before = rss_bytes(gw.process.pid)
            send_big_writes(gw.url, 30, DISTINCT)
            after = rss_bytes(gw.process.pid)
    growth = after - before
    print(f"rss before={before / 2**20:.0f} MiB after={after / 2**20:.0f} MiB growth={growth / 2**20:.0f} MiB")
    assert growth <= MAX_GROWTH, f"RSS grew by {growth / 2**20:.0f} MiB"
