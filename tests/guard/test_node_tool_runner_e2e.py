"""Anthropic message threads with the Node SDK: its tool runner (which threads by default, like
the Python one) through a real gateway to the scripted thread-keeping upstream, on loopback.

The runner is ``tests/support/node/tool_runner.mjs`` run by ``node``; the SDK is the installed
``@anthropic-ai/sdk`` (found through ``npm root -g`` or ``NODE_PATH``). CI installs no Node
packages and nothing is downloaded at test time, so without ``node`` or the SDK this is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.anthropic_upstream import Said, stubborn
from support.thread_upstream import BETA, threads

RUNNER = Path(__file__).resolve().parents[1] / "support" / "node" / "tool_runner.mjs"
SDK = "@anthropic-ai/sdk"
TERMINATE_AT = 5  # the ladder policy's terminate level (support.policies.ladder_policy)


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    """The environment that lets ``node`` resolve the SDK, or a skip saying what is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    paths = [p for p in os.environ.get("NODE_PATH", "").split(os.pathsep) if p]
    npm = shutil.which("npm")
    if npm is not None:
        found = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=30)
        paths += [found.stdout.strip()] if found.returncode == 0 and found.stdout.strip() else []
    env = {**os.environ, "NODE_PATH": os.pathsep.join(paths)}
    probe = subprocess.run([node, "-e", f"require.resolve({SDK!r})"], env=env, capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"{SDK} is not installed for node (npm install -g {SDK})")
    return env


def run(env: dict[str, str], gateway: str, *flags: str) -> dict:
    done = subprocess.run(["node", str(RUNNER), gateway, *flags], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("stream", [False, True])
def test_the_node_tool_runner_looping_on_a_thread_is_ended_like_one_sending_its_whole_history(
    threads, node_env, stream
):
    flags = ("--stream",) if stream else ()
    whole_upstream, whole_gateway = threads(stubborn())
    whole = run(node_env, whole_gateway, "--no-thread", *flags)
    threaded_upstream, threaded_gateway = threads(stubborn())
    threaded = run(node_env, threaded_gateway, *flags)

    assert threaded["stream"] is stream and threaded["threaded"] is True
    # Ended by the gateway within its ladder, not by max_iterations (15): the runner's last
    # request got a tools-closed answer and it ran no tool after it.
    assert 0 < threaded["executions"] < TERMINATE_AT and threaded["messages"] == threaded["executions"] + 1
    assert threaded["stop_reason"] == whole["stop_reason"] == "end_turn"
    assert threaded["final_text"] == whole["final_text"] != ""
    assert (threaded["executions"], threaded["messages"]) == (whole["executions"], whole["messages"])
    assert threaded_upstream.rejections == whole_upstream.rejections == []  # no thread rule broken
    # Nor did the gateway refuse a turn the SDK then replayed on its own: one 200 per message.
    assert threaded["statuses"] == [200] * threaded["messages"]
    kinds = [(r["json"].get("thread") or {}).get("type") for r in threaded_upstream.requests]
    assert kinds[0] == "create" and "continue" in kinds  # the SDK did thread, and the healthy part stayed so
    assert all("thread" not in r["json"] for r in whole_upstream.requests)
    assert len(threaded_upstream.requests) == len(whole_upstream.requests)


def test_a_node_thread_the_guard_leaves_alone_goes_upstream_byte_for_byte(threads, node_env):
    steps = iter(range(100))

    def healthy(body: dict) -> Said:
        step = next(steps)
        return Said(calls=[("read_file", {"path": f"f{step}.py"})]) if step < 4 else Said(text="Done.")

    upstream, gateway = threads(healthy)
    ended = run(node_env, gateway)

    assert (ended["executions"], ended["final_text"], ended["stop_reason"]) == (4, "Done.", "end_turn")
    assert upstream.rejections == [] and ended["statuses"] == [200] * 5
    kinds = [(r["json"].get("thread") or {}).get("type") for r in upstream.requests]
    assert kinds == ["create"] + ["continue"] * 4
    continues = upstream.requests[1:]
    assert all("tools" not in r["json"] and "system" not in r["json"] for r in continues)
    assert all(len(r["json"]["messages"]) == 1 for r in continues)  # only the new tool_result
    assert [r["raw"].decode() for r in upstream.requests] == ended["bodies"]
    assert all(BETA in r["headers"].get("anthropic-beta", "") for r in upstream.requests)
