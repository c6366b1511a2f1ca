"""mini-SWE-agent (the real pinned CLI, tool mode: its default config) through the gateway, against
a scripted model: the smoke set, one loop and one healthy run.

A model that runs the same ``cat a.txt`` every reply is ended within 8 executed commands, and the
run ends the way mini-SWE-agent ends a run: by the command that submits (its profile's
``finish``), carrying the model's own answer, written with tools closed. A bare answer would not
do: it rejects a reply without a tool call as a format error ("No tool calls found") and, after
three, exits with nothing submitted. Its healthy look-alike, 12 different commands, runs in full
and submits by itself, and no LoopGuard text ever reaches the model.

Text mode (one fenced block per reply) and its other cases are read from its traffic without
starting it (tests/trace/test_harness.py, tests/agents/test_profile_loops.py).
"""

from __future__ import annotations

import json

import pytest
from support.cli_runs import MAX_EXECUTED, default_policy, read_audit, write_files
from support.clis_mini import TOOL, looping, mini_cli, run_mini, sweeping, tools_closed
from support.guarded import guarded

pytestmark = pytest.mark.skipif(mini_cli() is None, reason="mini-SWE-agent is not installed")

FINAL = "FINAL ANSWER: a.txt says hello and never changes; there is nothing more to read."


def workspace(tmp_path, files: dict[str, str]):
    return write_files(tmp_path / "work", files)


def loopguard_reached_model(requests: list[dict]) -> bool:
    return any("[LoopGuard" in json.dumps(r["json"]) for r in requests if r["json"])


def test_a_loop_ends_with_the_models_answer_submitted(tmp_path):
    work = workspace(tmp_path, {"a.txt": "hello\n"})
    audit = tmp_path / "audit.jsonl"
    with guarded(looping(TOOL, "cat a.txt", FINAL), tmp_path, default_policy(), audit={"jsonl_path": str(audit)}) as gw:
        run = run_mini(gw.url, work, tmp_path, "Read a.txt and tell me what it says.", TOOL)
        requests = list(gw.upstream.requests)
    actions = [(e["action"], e["detector"], e.get("terminate")) for e in read_audit(audit)]
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.exit_status == "Submitted", (actions, run.stdout[-1500:])
    assert run.trajectory["info"]["submission"].strip() == FINAL  # the model's answer, submitted
    assert len(run.executed) <= MAX_EXECUTED, (len(run.executed), actions)
    assert any(tools_closed(r["json"]) for r in requests)  # the answer was asked with tools closed
    assert ("terminate", "answer") in [(a, t) for a, _, t in actions]


def test_twelve_different_commands_run_in_full(tmp_path):
    files = {f"f{i}.txt": "line\n" * i for i in range(1, 13)}
    work = workspace(tmp_path, files)
    commands = [f"wc -l f{i}.txt" for i in range(1, 13)]
    audit = tmp_path / "audit.jsonl"
    with guarded(sweeping(TOOL, commands), tmp_path, default_policy(), audit={"jsonl_path": str(audit)}) as gw:
        run = run_mini(gw.url, work, tmp_path, "Count the lines of f1.txt to f12.txt.", TOOL)
        requests = list(gw.upstream.requests)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.executed == [f"{i} f{i}.txt\n" for i in range(1, 13)]
    assert run.exit_status == "Submitted"
    assert not loopguard_reached_model(requests), read_audit(audit)
