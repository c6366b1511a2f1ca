"""Each shipped profile read through the shipped default policy, without the real clients: runs
written as each agent's harness writes them (its tool names, arguments and result envelope,
taken from the real clients' traffic), judged the way the gateway judges them (runs.judged).
Loops that vary are stopped; their healthy look-alikes stay untouched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "detectors"))
from runs import first, judged

from gateway.policy.actions import Action

CLAUDE = dict(
    tools=["Bash", "Read", "Edit", "Write", "Agent", "ToolSearch"], user_agent="claude-cli/2.1.332 (external, sdk-cli)"
)
CODEX = dict(tools=["exec_command", "write_stdin", "apply_patch", "update_plan"], user_agent="codex_exec/0.171.0")
GEMINI = dict(
    tools=["run_shell_command", "read_file", "replace", "write_file", "list_directory", "glob"],
    user_agent="GeminiCLI-tui/0.61.0/gemini-3.5-flash (linux; x64; terminal)",
)
QWEN = dict(
    tools=["run_shell_command", "read_file", "edit", "write_file", "grep_search", "tool_search", "agent"],
    user_agent="QwenCode/0.24.4 (linux; x64)",
)
COPILOT = dict(
    tools=["bash", "read_bash", "stop_bash", "list_bash", "view", "create", "edit", "grep", "glob"],
    system="You are the GitHub Copilot CLI, a terminal assistant built by GitHub.",
)


def codex(output: str, n: int, code: int = 0) -> str:
    return (
        f"Chunk ID: {(n * 7919 + 0x3F2A1B) % 0xFFFFFF:06x}\nWall time: 0.{n % 10}01 seconds\n"
        f"Process exited with code {code}\nOriginal token count: {len(output) // 4 + n}\nOutput:\n{output}"
    )


def gemini(output: str, n: int, code: int = 0) -> str:
    """As the Gemini adapter reads a ``{"output": ...}`` function response: its text."""
    exit_line = f"Exit Code: {code}\n" if code else ""
    return f"<untrusted_context>\nOutput: {output or '(empty)'}\n{exit_line}Process Group PGID: {9600 + 3 * n}\n</untrusted_context>"


def qwen(command: str, output: str, code: int = 0) -> str:
    return (
        f"Command: {command}\nDirectory: (root)\nOutput: {output or '(empty)'}\nError: (none)\n"
        f"Exit Code: {code}\nSignal: (none)\nProcess Group PGID: (none)"
    )


def copilot(output: str, n: int, code: int = 0) -> str:
    return f"{output}\n<shellId: {n} completed with exit code {code}>"


SPELLINGS = [
    "cat status.txt",
    "tail -1 status.txt",
    "tail -n 1 ./status.txt",
    "cat /work/job/status.txt",
    "head -n 1 status.txt",
    "tail -n1 status.txt",
    "cat ./status.txt",
    "sed -n 1p status.txt",
]


NARRATION = {"exec_command": "justification"}  # the others: "description"


def shell_runs(agent: dict, tool: str, key: str, wrap, commands, outputs, narrate=False) -> list:
    steps = []
    for n, (command, output) in enumerate(zip(commands, outputs)):
        args = {key: command}
        if narrate:
            args[NARRATION.get(tool, "description")] = f"Step {n}: checking how things stand now"
        steps.append((tool, args, wrap(command, output, n)))
    return ["watch the job", *steps]


WRAPS = {
    "claude": (CLAUDE, "Bash", "command", lambda c, o, n: o),
    "codex": (CODEX, "exec_command", "cmd", lambda c, o, n: codex(o, n)),
    "gemini": (GEMINI, "run_shell_command", "command", lambda c, o, n: gemini(o, n)),
    "qwen": (QWEN, "run_shell_command", "command", lambda c, o, n: qwen(c, o)),
    "copilot": (COPILOT, "bash", "command", lambda c, o, n: copilot(o, n)),
}


@pytest.mark.parametrize("name", WRAPS)
def test_one_poll_spelled_many_ways_is_ended_within_eight_calls(name):
    agent, tool, key, wrap = WRAPS[name]
    script = shell_runs(agent, tool, key, wrap, SPELLINGS * 2, ["running"] * 16, narrate=name in ("claude", "qwen"))
    assert first(script, "warn", **agent)[0] <= 3
    # Refused from the 6th call on: the re-asks (max_reasks 2) end the run after two more
    # refusals, so at most 5 of its calls ever run (runs.judged plays every call as executed).
    assert first(script, "reject", **agent)[0] <= 6


@pytest.mark.parametrize("name", WRAPS)
def test_a_poll_whose_output_moves_every_time_is_left_alone(name):
    agent, tool, key, wrap = WRAPS[name]
    script = shell_runs(
        agent,
        tool,
        key,
        wrap,
        ["python poll.py"] * 8,
        [f"job step {k + 1}/8 running" for k in range(7)] + ["job done"],
        narrate=name in ("claude", "qwen"),
    )
    assert [j for j in judged(script, **agent) if j[1] != "pass"] == []


@pytest.mark.parametrize("name", WRAPS)
def test_a_paced_poll_that_ends_at_poll_six_is_left_alone(name):
    agent, tool, key, wrap = WRAPS[name]
    script = shell_runs(agent, tool, key, wrap, ["sleep 1 && cat status.txt"] * 6, ["running"] * 5 + ["done"])
    assert [j for j in judged(script, **agent) if j[1] != "pass"] == []


@pytest.mark.parametrize("name", WRAPS)
def test_the_same_command_with_the_same_error_under_new_narration_repeats(name):
    agent, tool, key, wrap = WRAPS[name]
    script = shell_runs(
        agent,
        tool,
        key,
        wrap,
        ["python app.py"] * 8,
        ["Traceback (most recent call last):\nModuleNotFoundError: No module named 'yaml'"] * 8,
        narrate=True,
    )
    assert first(script, "warn", **agent)[0] == 3
    assert first(script, "terminate", **agent)[0] <= 8


def test_qwen_codes_none_error_field_is_no_failure():
    agent, tool, key, wrap = WRAPS["qwen"]
    script = shell_runs(agent, tool, key, wrap, ["./status.sh"] * 8, [f"job {k}: 40{k}% done" for k in range(8)])
    assert [j for j in judged(script, **agent) if j[1] != "pass"] == []


@pytest.mark.parametrize(
    ("agent", "tool", "args", "result"),
    [
        (
            CLAUDE,
            "Read",
            lambda n: {"file_path": "/w/a.py", "offset": 100 + 50 * n, "limit": 50},
            lambda n: (
                f"<system-reminder>Warning: the file exists but is shorter than the provided offset ({100 + 50 * n}). "
                "The file has 3 lines.</system-reminder>"
            ),
        ),
        (
            GEMINI,
            "read_file",
            lambda n: {"file_path": "/w/a.py", "start_line": 100 + 50 * n, "end_line": 150 + 50 * n},
            lambda n: (
                "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 4-3 of 3 total lines.\n"
                f"Action: To read more of the file, use start_line: {150 + 50 * n}.\n\n--- FILE CONTENT (truncated) ---\n"
            ),
        ),
        (
            QWEN,
            "read_file",
            lambda n: {"file_path": "/w/a.py", "offset": 100 + 50 * n, "limit": 50},
            lambda n: f"Showing lines {101 + 50 * n}-{101 + 50 * n} of 3 total lines.\n\n---\n\n",
        ),
        (
            CODEX,
            "exec_command",
            lambda n: {"cmd": f"sed -n '{100 + 50 * n},{150 + 50 * n}p' a.py"},
            lambda n: codex("", n),
        ),
    ],
    ids=["claude-read", "gemini-read", "qwen-read", "codex-sed"],
)
def test_reads_past_the_end_of_a_file_are_one_read_returning_nothing_new(agent, tool, args, result):
    script = ["read the rest of a.py", *[(tool, args(n), result(n)) for n in range(10)]]
    assert first(script, "warn", **agent)[0] == 3
    assert first(script, "terminate", **agent)[0] <= 8


@pytest.mark.parametrize(
    ("agent", "tool", "args", "result"),
    [
        (
            CLAUDE,
            "Read",
            lambda n: {"file_path": "/w/big.py", "offset": 1 + 50 * n, "limit": 50},
            lambda n: "\n".join(f"{1 + 50 * n + k}\tline {1 + 50 * n + k}" for k in range(50)),
        ),
        (
            CODEX,
            "exec_command",
            lambda n: {"cmd": f"sed -n '{1 + 50 * n},{50 + 50 * n}p' big.py"},
            lambda n: codex("\n".join(f"line {1 + 50 * n + k}" for k in range(50)), n),
        ),
    ],
    ids=["claude-read", "codex-sed"],
)
def test_scrolling_through_a_long_file_is_left_alone(agent, tool, args, result):
    script = ["read big.py", *[(tool, args(n), result(n)) for n in range(12)]]
    assert [j for j in judged(script, **agent) if j[1] != "pass"] == []


def test_copilot_view_of_a_missing_path_is_a_failure():
    script = [
        "read the config",
        *[
            ("view", {"path": f"/w/{p}"}, f"Path /w/{p} does not exist. Please provide a valid path.")
            for p in [
                "config.yaml",
                "config.yml",
                "conf/config.yaml",
                "settings.json",
                "app.toml",
                "config/app.yaml",
                ".env",
                "settings.ini",
                "app.conf",
            ]
        ],
    ]
    assert first(script, "warn", **COPILOT) == (3, "target_failure")
    assert first(script, "terminate", **COPILOT)[0] <= 9


def test_a_declared_tool_is_never_unknown_whatever_its_result_says():
    script = [
        "find the release",
        *[("mcp__github__get_release", {"tag": f"v1.{n}"}, "Error: release not found") for n in range(4)],
    ]
    tools = ["mcp__github__get_release", "Bash"]
    assert all(d != "unknown_tool" for _, _, d in judged(script, tools=tools))
    assert any(
        d == "unknown_tool"
        for _, _, d in judged(
            ["go", *[("made_up_tool", {"x": n}, "Error: unknown tool made_up_tool") for n in range(4)]], tools=tools
        )
    )


def test_the_same_status_script_asked_for_by_the_user_each_time_is_left_alone():
    """ "How is it going?" and the agent runs its status script: each a new user turn."""
    script = []
    for _k in range(6):
        script += [
            "how is it going?",
            ("Bash", {"command": "./status.sh", "description": "Check the job"}, "job 42: running (3 of 9 steps done)"),
        ]
    assert [j for j in judged(script, **CLAUDE) if j[1] != "pass"] == []


@pytest.mark.parametrize("name", WRAPS)
def test_a_sweep_of_one_command_over_different_files_is_left_alone(name):
    agent, tool, key, wrap = WRAPS[name]
    script = shell_runs(
        agent,
        tool,
        key,
        wrap,
        [f"wc -l data/f{k}.txt" for k in range(12)],
        [f"{10 + k} data/f{k}.txt" for k in range(12)],
    )
    assert [j for j in judged(script, **agent) if j[1] != "pass"] == []
