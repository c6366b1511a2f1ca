"""The classes of loops real agents' recorded sessions showed, and the healthy runs shaped like
them, as scripts (see tests/detectors/runs.py) with the agent that speaks each: its declared
tools and system prompt, so its profile reads it as in production. Shared by the detector tests,
the end-to-end tests and the metamorphic tests.

A script is a list of: a string (a genuine user message), ``(tool, args, result)`` (one call
and its result; ``args`` a dict, or text for a freeform tool), or a list of those (the parallel
calls of one round)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CWD = "/home/dev/repo"


@dataclass(frozen=True)
class Speaker:
    """An agent as a request shows it: the tools it declares and its system prompt."""

    name: str
    tools: tuple[str, ...]
    system: str

    @property
    def cwd(self) -> str:
        """The working directory its system prompt states, "" when it states none."""
        return CWD if f"Working directory: {CWD}" in self.system else ""

    def kwargs(self) -> dict[str, Any]:
        return {"tools": list(self.tools), "system": self.system}


CLAUDE = Speaker(
    "claude_code",
    ("Bash", "BashOutput", "Read", "Edit", "Write", "Grep", "Glob", "mcp__crm__lookup_customer"),
    f"You are Claude Code, Anthropic's official CLI for Claude.\n<env>\nWorking directory: {CWD}\n</env>",
)
CODEX = Speaker(
    "codex",
    ("exec_command", "write_stdin", "apply_patch", "update_plan"),
    "You are a coding agent running in the Codex CLI, a terminal-based coding assistant.",
)
GEMINI = Speaker(
    "gemini_cli",
    ("run_shell_command", "read_file", "replace", "write_file", "list_directory", "glob"),
    "You are an interactive CLI agent specializing in software engineering tasks.",
)
QWEN = Speaker(
    "qwen_code",
    ("run_shell_command", "read_file", "edit", "write_file", "grep_search", "tool_search"),
    "You are Qwen Code, an interactive CLI agent.",
)
# A client no profile names (older Cline's tool names, an MCP client of its own): the generic reading.
GENERIC = Speaker(
    "generic",
    ("write_to_file", "replace_in_file", "read_file", "execute_command", "list_files", "mcp__files__read"),
    "You are a helpful coding agent.",
)


@dataclass(frozen=True)
class Case:
    """A run of one class: ``stop_by`` is the call by which a loop must be stopped (refused or
    ended); None for a healthy run, which must never be. Tags: ``warned``, a healthy run the
    gateway may warn (a job polled without pause, told to pace; refused edits before a new way)."""

    script: Callable[[], list[Any]]
    speaker: Speaker
    stop_by: int | None = None
    warn_by: int | None = None
    tags: frozenset[str] = field(default_factory=frozenset)


# --- parallel calls are one round --------------------------------------------------------------


def refused_edit(k: int) -> tuple:
    return (
        "Edit",
        {"file_path": f"{CWD}/src/mod{k}.py", "old_string": f"old_name_{k}(", "new_string": f"new_name_{k}("},
        f"<tool_use_error>String to replace not found in file.\nString: old_name_{k}(</tool_use_error>",
    )


def fixed_edit(k: int) -> tuple:
    return (
        "Edit",
        {"file_path": f"{CWD}/src/mod{k}.py", "old_string": f"old_name_{k} (", "new_string": f"new_name_{k}("},
        f"The file {CWD}/src/mod{k}.py has been updated successfully.",
    )


def edits_batched() -> list:
    """A rename in 17 files in one batch; 16 edits miss, and the next batch fixes them."""
    return [
        "rename old_name to new_name everywhere",
        [fixed_edit(0), *[refused_edit(k) for k in range(1, 17)]],
        [fixed_edit(k) for k in range(1, 17)],
    ]


def edits_one_by_one() -> list:
    return ["rename old_name to new_name everywhere", *[refused_edit(k) for k in range(1, 12)]]


def lookup(k: int, result: str = "MCP error -32603: crm backend unavailable (connection refused)") -> tuple:
    return ("mcp__crm__lookup_customer", {"customer_id": f"C-{1000 + 37 * k}"}, result)


def lookups_batched() -> list:
    return ["look up these customers", [lookup(k) for k in range(10)], ("Bash", {"command": "echo done"}, "done")]


def lookups_one_by_one(result: Callable[[int], str] | None = None) -> list:
    return ["look up the customers on my list", *[lookup(k, *([result(k)] if result else [])) for k in range(10)]]


def same_reads_batched() -> list:
    read = ("Read", {"file_path": f"{CWD}/notes.md"}, "1\tTODO: nothing yet")
    return ["read the notes", [read] * 8, ("Bash", {"command": "ls"}, "notes.md")]


# --- a job that progresses ----------------------------------------------------------------------


def tail(rows: int) -> tuple:
    return ("Bash", {"command": "tail -n 3 /tmp/ingest.log", "description": "check"}, f"processed {rows} rows")


def bash_output(rows: int) -> tuple:
    return (
        "BashOutput",
        {"bash_id": "bash_1"},
        "<status>running</status>\n<stdout>\n" + "row\n" * (rows // 1000) + "</stdout>",
    )


def qwen_status(rows: int) -> tuple:
    return (
        "run_shell_command",
        {"command": "cat progress.txt", "description": "check"},
        f"Command: cat progress.txt\nDirectory: (root)\nOutput: {rows} rows\nError: (none)\nExit Code: 0\n"
        "Signal: (none)\nProcess Group PGID: (none)",
    )


def growing(step: Callable[[int], tuple], polls: int = 45, streak: int = 4) -> list:
    """``polls`` polls of a job whose output grows, stays the same for ``streak`` polls, grows
    again (it is seen moving from its first answers)."""
    out, rows = [], 0
    for k in range(polls):
        if k < 2 or k % (streak + 1) == 0:
            rows += 1000
        out.append(step(rows))
    return ["run the ingestion and watch it", *out]


def busy(step: Callable[[int], tuple], polls: int = 60) -> list:
    return ["watch the job", *[step(0) for _ in range(polls)]]


# --- one target however reached ----------------------------------------------------------------

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


def patch(path: str, old: str, new: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch"


def codex_patches(shape: Callable[[str], Any], tool: str = "apply_patch") -> list:
    steps = []
    for k in range(16):
        text = patch("src/a.py", f"    return total + {k}", "    return total")
        refusal = f"apply_patch verification failed: Failed to find expected lines in src/a.py:\n    return total + {k}"
        steps.append((tool, shape(text), refusal))
    return ["fix the total", *steps]


def many_files() -> list:
    """Many different files, each read and counted once, some missing."""
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


# --- the same failure whatever changed ----------------------------------------------------------


def alternating_rewrites() -> list:
    """Two files rewritten in turn, the same type error after each rewrite (its column moves)."""
    steps = []
    for k in range(10):
        path = "src/a.ts" if k % 2 == 0 else "src/b.ts"
        steps.append(("write_to_file", {"path": path, "content": f"export const v: number = parse('{k}');\n"}, "ok"))
        steps.append(
            (
                "execute_command",
                {"command": "npx tsc --noEmit"},
                f"src/a.ts(1,{14 + k}): error TS2322: Type 'string' is not assignable to type 'number'.\nExit code: 2",
            )
        )
    return ["fix the type errors", *steps]


def denied_rewrites() -> list:
    rewrite = lambda k: {"path": "src/utils.ts", "content": f"export const x = {k};\n" * 20}  # noqa: E731
    return ["refactor utils.ts", *[("write_to_file", rewrite(k), "The user denied this operation.") for k in range(9)]]


def created_never_listed() -> list:
    """A file created again and again, the listing of its folder never showing it."""
    steps = []
    for k in range(8):
        steps.append(("write_to_file", {"path": "config/app.yaml", "content": f"port: {8000 + k}\n"}, "ok"))
        steps.append(("list_files", {"path": "config"}, "No files found."))
    return ["create the config files", *steps]


MCP_RESULTS = {
    "MCP error text": lambda k: "MCP error -32603: crm backend unavailable (connection refused)",
    "isError flag": lambda k: json.dumps(
        {"isError": True, "content": [{"type": "text", "text": "crm backend unavailable (connection refused)"}]}
    ),
    "plain error text": lambda k: "Error: crm backend unavailable (connection refused)",
}


def sweep_naming_items() -> list:
    return [
        "read the shards",
        *[
            ("mcp__files__read", {"path": f"shards/missing_{k}.txt"}, f"Error: missing_{k}.txt not found")
            for k in range(10)
        ],
    ]


def lookups_naming_ids() -> list:
    return lookups_one_by_one(lambda k: f"Error: no customer C-{1000 + 37 * k}")


def installs_each_naming_the_next_module() -> list:
    steps = []
    for module in ["numpy", "pandas", "pytz", "six", "dateutil", "yaml"]:
        error = f"ModuleNotFoundError: No module named '{module}'\nExit code 1"
        steps.append(("Bash", {"command": "python3 explore.py"}, error))
        steps.append(("Bash", {"command": f"pip install {module}"}, f"Successfully installed {module}"))
    return ["explore the dataset", *steps, ("Bash", {"command": "python3 explore.py"}, "rows: 1200")]


def fixes_each_failing_otherwise() -> list:
    steps = []
    errors = ["NameError: name 'x' is not defined", "TypeError: bad operand", "KeyError: 'id'", None]
    for k, error in enumerate(errors):
        edit = {"file_path": f"{CWD}/app.py", "old_string": f"v{k}", "new_string": f"v{k + 1}"}
        steps.append(("Edit", edit, "The file has been updated."))
        steps.append(
            ("Bash", {"command": "python app.py"}, f"Traceback (most recent call last):\n{error}" if error else "done")
        )
    return ["make app.py run", *steps]


def codex_spec_phases() -> list:
    """A spec workflow: each phase re-reads the spec files, ticks its tasks off one patch at a
    time (each answered "Success"), runs the tests."""
    words = ["Create user model", "Add login endpoint", "Add logout endpoint", "Write session store"]
    files = {"specs/requirements.md": "# Requirements\n- R1 login\n", "specs/design.md": "# Design\nSessions\n"}
    steps: list[Any] = []
    for phase in range(1, 4):
        for path, text in files.items():
            steps.append(("exec_command", {"cmd": f"sed -n '1,200p' {path}"}, codex_output(text, len(steps))))
        for t, word in enumerate(words, 1):
            text = patch("specs/tasks.md", f"- [ ] {phase}.{t} {word}", f"- [x] {phase}.{t} {word}")
            steps.append(("apply_patch", text, "Success. Updated the following files:\nM specs/tasks.md\n"))
        steps.append(("exec_command", {"cmd": "pytest -q"}, codex_output(f"{phase * 4} passed", len(steps))))
    return ["implement the spec, phase by phase", *steps]


def codex_output(output: str, n: int, code: int = 0) -> str:
    return (
        f"Chunk ID: {(n * 7919 + 0x3F2A1B) % 0xFFFFFF:06x}\nWall time: 0.{n % 10}01 seconds\n"
        f"Process exited with code {code}\nOriginal token count: {len(output) // 4 + n}\nOutput:\n{output}"
    )


WARNED = frozenset({"warned"})

LOOPS: dict[str, Case] = {
    "refused edits one per round": Case(edits_one_by_one, CLAUDE, stop_by=8, warn_by=3),
    "an MCP tool failing the same way, one id per round": Case(lookups_one_by_one, CLAUDE, stop_by=6, warn_by=3),
    "a busy poll that never moves (Bash tail)": Case(lambda: busy(tail), CLAUDE, stop_by=7, warn_by=3),
    "a busy poll that never moves (BashOutput)": Case(lambda: busy(bash_output), CLAUDE, stop_by=7, warn_by=3),
    "a busy poll that never moves (Qwen Code)": Case(lambda: busy(qwen_status), QWEN, stop_by=7, warn_by=3),
    "a missing file, read tool then programs (Claude Code)": Case(claude_missing_file, CLAUDE, stop_by=6, warn_by=3),
    "a missing file, three spellings then programs (Gemini CLI)": Case(
        gemini_missing_file, GEMINI, stop_by=6, warn_by=3
    ),
    "refused apply_patch, freeform": Case(lambda: codex_patches(lambda p: p), CODEX, stop_by=6, warn_by=3),
    "refused apply_patch, {'input': patch}": Case(lambda: codex_patches(lambda p: {"input": p}), CODEX, 6, 3),
    "refused apply_patch through the shell": Case(
        lambda: codex_patches(lambda p: {"cmd": f"apply_patch <<'EOF'\n{p}\nEOF"}, "exec_command"), CODEX, 6, 3
    ),
    "the same type error after each alternating rewrite": Case(alternating_rewrites, GENERIC, stop_by=12, warn_by=6),
    "the same rewrite denied again and again": Case(denied_rewrites, GENERIC, stop_by=6, warn_by=3),
    "a file created again and again, never listed": Case(created_never_listed, GENERIC, stop_by=10, warn_by=6),
    **{
        f"an MCP tool, the same error for every id ({name})": Case(
            lambda result=result: lookups_one_by_one(result), CLAUDE, stop_by=6, warn_by=3
        )
        for name, result in MCP_RESULTS.items()
    },
}

HEALTHY: dict[str, Case] = {
    "a batch of edits that fail together, fixed by the next batch": Case(edits_batched, CLAUDE),
    "a batch of lookups failing together": Case(lookups_batched, CLAUDE),
    "one read repeated in one batch": Case(same_reads_batched, CLAUDE),
    "a job growing between streaks of 4 (Bash tail)": Case(lambda: growing(tail), CLAUDE, tags=WARNED),
    "a job growing between streaks of 6 (BashOutput)": Case(
        lambda: growing(bash_output, streak=6), CLAUDE, tags=WARNED
    ),
    "a job growing between streaks of 12 (Qwen Code)": Case(lambda: growing(qwen_status, streak=12), QWEN, tags=WARNED),
    "many files, each read and counted once": Case(many_files, CLAUDE),
    "a whole-file write after refused edits": Case(write_after_refused_edits, CLAUDE, tags=WARNED),
    "a sweep whose failures name their item": Case(sweep_naming_items, GENERIC),
    "lookups whose errors name the id": Case(lookups_naming_ids, CLAUDE),
    "installs failing on a new module each round": Case(installs_each_naming_the_next_module, CLAUDE),
    "fixes each failing otherwise": Case(fixes_each_failing_otherwise, CLAUDE),
    "a spec workflow ticking tasks off phase by phase (Codex)": Case(codex_spec_phases, CODEX),
}
