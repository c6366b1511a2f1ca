"""One target however it is reached: a file is one target whichever tool, program or spelling
reaches it (absolute or relative to the working directory the agent states, `./` or not; the
read tool, `cat`, `head`, `sed`, `od`, a one-liner that opens it; the files an `apply_patch`
names). After a warning about a file, failing attempts on it by other means climb the ladder;
healthy work over many files, or a new kind of action on the file (writing it), stays free."""

from __future__ import annotations

import pytest
from runs import replayed, stopped_at

CWD = "/home/dev/repo"
CLAUDE = dict(
    tools=["Bash", "Read", "Edit", "Write", "Grep"],
    system=f"You are Claude Code.\n<env>\nWorking directory: {CWD}\n</env>",
)
GEMINI = dict(
    tools=["run_shell_command", "read_file", "replace", "write_file", "list_directory", "glob"],
    system="You are an interactive CLI agent.",
)
CODEX = dict(
    tools=["exec_command", "write_stdin", "apply_patch", "update_plan"],
    system="You are a coding agent running in the Codex CLI.",
)
MISSING = "config/settings.yaml"
PROGRAMS = [
    f"cat {MISSING}",
    f"head -n 50 ./{MISSING}",
    f"tail -n 20 {CWD}/{MISSING}",
    f"sed -n '1,40p' {MISSING}",
    f"awk '{{print}}' {MISSING}",
    f"grep -n port {MISSING}",
    f"python3 -c \"print(open('{MISSING}').read())\"",
    f"node -e \"console.log(require('fs').readFileSync('{CWD}/{MISSING}', 'utf8'))\"",
    f"od -c {MISSING}",
    f"wc -l {MISSING}",
    f"less {MISSING}",
    f"nl {MISSING}",
]


def shell_error(command: str) -> str:
    program = command.split()[0]
    if program.startswith(("python", "node")):
        return (
            f"Traceback (most recent call last):\nFileNotFoundError: [Errno 2] No such file or directory: '{MISSING}'"
        )
    return f"{program}: {MISSING}: No such file or directory\nExit code 1"


def claude_missing_file() -> list:
    reads = [("Read", {"file_path": f"{CWD}/{MISSING}"}, "<tool_use_error>File does not exist.</tool_use_error>")] * 3
    shells = [("Bash", {"command": c, "description": "look"}, shell_error(c)) for c in PROGRAMS]
    return ["read the settings", *reads, *shells]


def gemini_missing_file() -> list:
    reads = [
        ("read_file", {"file_path": f"{CWD}/{MISSING}"}, f"File not found: {CWD}/{MISSING}"),
        ("read_file", {"file_path": MISSING}, f"File not found: {MISSING}"),
        ("read_file", {"file_path": f"./{MISSING}"}, f"File not found: {MISSING}"),
    ]
    shells = [("run_shell_command", {"command": c}, f"Output: {shell_error(c)}\nExit Code: 1") for c in PROGRAMS]
    return ["read the settings", *reads, *shells]


def patch(path: str, k: int) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-    return total + {k}\n+    return total\n*** End Patch"


def refused(k: int) -> str:
    return f"apply_patch verification failed: Failed to find expected lines in src/a.py:\n    return total + {k}"


def codex_patches(shape, tool: str = "apply_patch") -> list:
    return ["fix the total", *[(tool, shape(patch("src/a.py", k)), refused(k)) for k in range(16)]]


LOOPS = {
    "a missing file read with the read tool, then one program after another (Claude Code)": (
        claude_missing_file,
        CLAUDE,
    ),
    "a missing file read by its path spelled three ways, then by programs (Gemini CLI)": (gemini_missing_file, GEMINI),
    "refused apply_patch, freeform input": (lambda: codex_patches(lambda p: p), CODEX),
    "refused apply_patch, {'input': patch}": (lambda: codex_patches(lambda p: {"input": p}), CODEX),
    "refused apply_patch through the shell": (
        lambda: codex_patches(lambda p: {"cmd": f"apply_patch <<'EOF'\n{p}\nEOF"}, "exec_command"),
        CODEX,
    ),
}


@pytest.mark.parametrize("case", LOOPS)
def test_one_failing_file_reached_by_other_means_is_stopped(case):
    script, agent = LOOPS[case]
    first = replayed(script(), **agent)
    assert first["warn"][0] <= 3
    assert stopped_at(script(), **agent) <= 6


def test_the_file_a_call_names_is_one_whatever_its_spelling(tmp_path):
    from gateway.policy.loader import load_shipped_policy
    from gateway.trace.builder import build_trace
    from runs import conversation

    script = claude_missing_file()
    policy = load_shipped_policy("default").resolve()
    conv, _ = conversation(script, tools=CLAUDE["tools"], system=CLAUDE["system"])
    settings = policy.for_agent(conv, "").trace_settings
    files = {e.file for e in build_trace(conv, settings).events}
    assert files == {f"{CWD}/{MISSING}"}


def many_files() -> list:
    """A sweep reading many different files, some missing: each file once."""
    steps = []
    for k in range(14):
        path = f"{CWD}/docs/page_{k}.md"
        steps.append(("Read", {"file_path": path}, f"# Page {k}\n" if k % 3 else "File does not exist."))
        steps.append(("Bash", {"command": f"wc -l docs/page_{k}.md"}, f"{k} docs/page_{k}.md"))
    return ["summarise the docs", *steps]


def write_after_refused_edits() -> list:
    edits = [
        (
            "Edit",
            {"file_path": f"{CWD}/src/app.py", "old_string": f"timeout = {k}0 ", "new_string": "timeout = 60"},
            "<tool_use_error>String to replace not found in file.</tool_use_error>",
        )
        for k in range(4)
    ]
    write = ("Write", {"file_path": f"{CWD}/src/app.py", "content": "timeout = 60\n"}, "File created successfully.")
    read = ("Read", {"file_path": "src/app.py"}, "1\ttimeout = 60")
    return ["raise the timeout", *edits, write, read, ("Bash", {"command": "pytest -q"}, "3 passed")]


HEALTHY = {
    "many files, each read and counted once": many_files,
    "a whole-file write after refused edits, then a read of it": write_after_refused_edits,
}


@pytest.mark.parametrize("case", HEALTHY)
def test_work_across_files_or_a_new_way_is_never_stopped(case):
    assert stopped_at(HEALTHY[case](), **CLAUDE) is None
