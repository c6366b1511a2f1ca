"""The startup line of ``loopguard serve``: the address it really bound, the policy, the state
backend and the routes it guards, as the first thing an operator reads."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx
from support.process import ROOT, child_env
from support.waiting import wait_for


def started_line(stderr_path) -> dict | None:
    for line in stderr_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"gateway_started"' in line:
            return json.loads(line)
    return None


def test_startup_line_names_the_bound_port_policy_state_and_routes(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "server: {port: 0}\npolicy: strict\nstate:\n  backend: redis\n  url: redis://:hunter2@127.0.0.1:1/0\n"
    )  # never reached: only named
    stderr_path = tmp_path / "stderr.log"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--config", str(config)],
            env=child_env(),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        assert wait_for(lambda: started_line(stderr_path) is not None or process.poll() is not None, 30)
        line = started_line(stderr_path)
        assert line is not None, stderr_path.read_text()
        host, port = line["address"].removeprefix("http://").rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0  # port 0 asked: the real one is named
        assert httpx.get(line["address"] + "/healthz").status_code == 200
        assert line["policy"] == "strict" and line["policy_file"].endswith("strict.yaml")
        assert line["state"] == "redis redis://:***@127.0.0.1:1/0"  # never the password
        assert "hunter2" not in stderr_path.read_text()
        assert "/v1/chat/completions" in line["guarded"] and "/v1/messages" in line["guarded"]
        assert line["anthropic_upstream"] == "https://api.anthropic.com"
        assert "/v1/{rest:path}" not in line["guarded"]  # relayed, not guarded
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
