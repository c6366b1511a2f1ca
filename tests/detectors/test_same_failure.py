"""The same failure, whatever changed: one failure, normalised (paths, line numbers, ids and
timestamps aside), after each of several different edits or commands; one tool error for
different arguments when the error does not name what varies (or the result is flagged as an
error: is_error, isError, "MCP error ..."); a user denying the same operation again and again.
Each is another attempt of one thing. Sweeps whose failures name their item stay sweeps."""

from __future__ import annotations

import json

import pytest
from runs import replayed, stopped_at

CLINE_TOOLS = ["write_to_file", "replace_in_file", "read_file", "execute_command", "list_files"]
MCP_TOOLS = ["mcp__crm__lookup_customer", "mcp__files__read", "Bash", "Read"]


def alternating_rewrites() -> list:
    """Each of two files rewritten in turn, and the same type error after each rewrite (its
    column moves as the text does)."""
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
    return [
        "refactor utils.ts",
        *[
            (
                "write_to_file",
                {"path": "src/utils.ts", "content": f"export const x = {k};\n" * 20},
                "The user denied this operation.",
            )
            for k in range(9)
        ],
    ]


def mcp_unavailable(result) -> list:
    return [
        "look up the customers on my list",
        *[("mcp__crm__lookup_customer", {"customer_id": f"C-{1000 + 37 * k}"}, result(k)) for k in range(10)],
    ]


MCP_RESULTS = {
    "MCP error text": lambda k: "MCP error -32603: crm backend unavailable (connection refused)",
    "isError flag": lambda k: json.dumps(
        {"isError": True, "content": [{"type": "text", "text": "crm backend unavailable (connection refused)"}]}
    ),
    "plain error text": lambda k: "Error: crm backend unavailable (connection refused)",
}

LOOPS = {
    "the same type error after each alternating rewrite of two files": (alternating_rewrites, CLINE_TOOLS, 20),
    "the same whole-file rewrite denied again and again": (denied_rewrites, CLINE_TOOLS, 6),
    **{
        f"an MCP tool answering the same error for every id ({k})": (lambda r=r: mcp_unavailable(r), MCP_TOOLS, 6)
        for k, r in MCP_RESULTS.items()
    },
}


@pytest.mark.parametrize("case", LOOPS)
def test_the_same_failure_whatever_changed_is_stopped(case):
    script, tools, by = LOOPS[case]
    assert replayed(script(), tools=tools)["warn"][0] <= 6
    assert stopped_at(script(), tools=tools) <= by


def sweep_naming_items() -> list:
    return [
        "read the shards",
        *[
            ("mcp__files__read", {"path": f"shards/missing_{k}.txt"}, f"Error: missing_{k}.txt not found")
            for k in range(10)
        ],
    ]


def lookups_naming_ids() -> list:
    return [
        "look up the customers",
        *[
            (
                "mcp__crm__lookup_customer",
                {"customer_id": f"C-{1000 + 37 * k}"},
                f"Error: no customer C-{1000 + 37 * k}",
            )
            for k in range(10)
        ],
    ]


def installs_each_naming_the_next_module() -> list:
    steps = []
    for module in ["numpy", "pandas", "pytz", "six", "dateutil", "yaml"]:
        steps.append(
            ("Bash", {"command": "python3 explore.py"}, f"ModuleNotFoundError: No module named '{module}'\nExit code 1")
        )
        steps.append(("Bash", {"command": f"pip install {module}"}, f"Successfully installed {module}"))
    return ["explore the dataset", *steps, ("Bash", {"command": "python3 explore.py"}, "rows: 1200")]


def fixes_each_failing_otherwise() -> list:
    steps = []
    for k, error in enumerate(["NameError: name 'x' is not defined", "TypeError: bad operand", "KeyError: 'id'", "ok"]):
        steps.append(("Edit", {"file_path": "app.py", "old_string": f"v{k}", "new_string": f"v{k + 1}"}, "updated"))
        steps.append(
            (
                "Bash",
                {"command": "python app.py"},
                f"Traceback (most recent call last):\n{error}" if error != "ok" else "done",
            )
        )
    return ["make app.py run", *steps]


HEALTHY = {
    "a sweep whose failures name their item": sweep_naming_items,
    "lookups whose errors name the id": lookups_naming_ids,
    "installs failing on a new module each round": installs_each_naming_the_next_module,
    "fixes each failing otherwise": fixes_each_failing_otherwise,
}


@pytest.mark.parametrize("case", HEALTHY)
def test_failures_that_change_or_name_their_item_are_never_stopped(case):
    assert stopped_at(HEALTHY[case](), tools=MCP_TOOLS + ["Edit"]) is None
