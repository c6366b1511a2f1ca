"""mini-SWE-agent through the gateway, in tool mode and in text mode, against a scripted model.

A model that runs the same ``cat a.txt`` every reply (a tool call, or one fenced block per reply
in text mode) is ended within 8 executed commands: the run's final answer is the model's own,
written with tools closed, and the user sees it (mini-SWE-agent prints no reply that holds no
action: it files it in the trajectory it writes for the user). mini-SWE-agent answers a reply without an action
with its own user message ("Tool call error: ..." / "Format error: ..."); that nudge must not
restart the gateway's counts, or the loop starts again. Beside each loop, a healthy run of 12
different commands executes in full, and no LoopGuard text ever reaches the model.

With ``terminate.mode: error`` the gateway's refusal must be one the client treats as final:
mini-SWE-agent retries every model error it does not know as fatal (10 attempts, exponential
back-off up to a minute), so the terminated request must reach the gateway once.
"""

from __future__ import annotations

import json

import pytest
from support.cli_runs import MAX_EXECUTED, default_policy, error_mode_policy, read_audit, write_files
from support.clis_mini import TEXT, TEXT_BASH, TOOL, looping, mini_cli, run_mini, sweeping, tools_closed
from support.guarded import guarded

pytestmark = pytest.mark.skipif(mini_cli() is None, reason="mini-SWE-agent is not installed")

FINAL = "FINAL ANSWER: a.txt says hello and never changes; there is nothing more to read."
MODES = [pytest.param(TOOL, id="tool"), pytest.param(TEXT, id="text"), pytest.param(TEXT_BASH, id="text-bash-fence")]


def workspace(tmp_path, files: dict[str, str]):
    return write_files(tmp_path / "work", files)


def loopguard_reached_model(requests: list[dict]) -> bool:
    return any("[LoopGuard" in json.dumps(r["json"]) for r in requests if r["json"])


@pytest.mark.parametrize("mode", MODES)
def test_the_same_command_every_reply_is_ended_with_the_models_answer(mode, tmp_path):
    work = workspace(tmp_path, {"a.txt": "hello\n"})
    audit = tmp_path / "audit.jsonl"
    with guarded(looping(mode, "cat a.txt", FINAL), tmp_path, default_policy(), audit={"jsonl_path": str(audit)}) as gw:
        run = run_mini(gw.url, work, tmp_path, "Read a.txt and tell me what it says.", mode)
        requests = list(gw.upstream.requests)
    actions = [(e["action"], e["detector"]) for e in read_audit(audit)]
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.shows(FINAL), actions
    assert len(run.executed) <= MAX_EXECUTED, (len(run.executed), actions)
    assert any(tools_closed(r["json"]) for r in requests)  # the answer was asked with tools closed


@pytest.mark.parametrize("mode", MODES)
def test_twelve_different_commands_run_in_full(mode, tmp_path):
    files = {f"f{i}.txt": "line\n" * i for i in range(1, 13)}
    work = workspace(tmp_path, files)
    commands = [f"wc -l f{i}.txt" for i in range(1, 13)]
    audit = tmp_path / "audit.jsonl"
    with guarded(sweeping(mode, commands), tmp_path, default_policy(), audit={"jsonl_path": str(audit)}) as gw:
        run = run_mini(gw.url, work, tmp_path, "Count the lines of f1.txt to f12.txt.", mode)
        requests = list(gw.upstream.requests)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.executed == [f"{i} f{i}.txt\n" for i in range(1, 13)]
    assert run.exit_status == "Submitted"
    assert not loopguard_reached_model(requests), read_audit(audit)


def test_error_mode_is_final_for_mini_swe_agent(tmp_path):
    """A looping run ended with ``terminate.mode: error``: the client gets the gateway's error
    once and stops; it never sends the terminated request again. (The retry cap is lowered to
    3 so a client that does retry shows it within seconds instead of minutes.)"""
    work = workspace(tmp_path, {"a.txt": "hello\n"})
    audit = tmp_path / "audit.jsonl"
    with guarded(
        looping(TOOL, "cat a.txt", FINAL), tmp_path, error_mode_policy(), audit={"jsonl_path": str(audit)}
    ) as gw:
        run = run_mini(
            gw.url,
            work,
            tmp_path,
            "Read a.txt and tell me what it says.",
            TOOL,
            extra_env={"MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "3"},
        )
        bodies = [r["raw"] for r in gw.upstream.requests]
    terminates = [e for e in read_audit(audit) if e["action"] == "terminate"]
    assert len(terminates) == 1, [(e["action"], e["detector"], e["phase"]) for e in read_audit(audit)]
    assert len(bodies) == len(set(bodies))  # no request forwarded twice
    assert len(run.executed) <= MAX_EXECUTED
    assert "loop" in (run.stdout + run.stderr).lower()  # the user is told why it stopped
