"""Calls one assistant message issues together were all chosen before any of their results
existed: a batch is one attempt at each of its calls, never a streak. The same calls issued one
per round are a streak, counted as before. Each case is a batch that must stay quiet under the
shipped default policy, and the same calls spread over rounds, which must be caught."""

from __future__ import annotations

import pytest
from runs import first, judged

CLAUDE = dict(
    tools=["Bash", "Read", "Edit", "Write", "Agent", "mcp__crm__lookup_customer"],
    user_agent="claude-cli/2.1.332 (external, sdk-cli)",
)


def refused_edit(k: int) -> tuple:
    return (
        "Edit",
        {"file_path": f"/w/src/mod{k}.py", "old_string": f"old_name_{k}(", "new_string": f"new_name_{k}("},
        f"<tool_use_error>String to replace not found in file.\nString: old_name_{k}(</tool_use_error>",
    )


def fixed_edit(k: int) -> tuple:
    return (
        "Edit",
        {"file_path": f"/w/src/mod{k}.py", "old_string": f"old_name_{k} (", "new_string": f"new_name_{k}("},
        f"The file /w/src/mod{k}.py has been updated successfully.",
    )


def edits_batched() -> list:
    """Claude Code renames a function in 17 files in one batch; 16 edits miss (a space before
    the parenthesis), and the next batch fixes them."""
    first_batch = [fixed_edit(0), *[refused_edit(k) for k in range(1, 17)]]
    return ["rename old_name to new_name everywhere", first_batch, [fixed_edit(k) for k in range(1, 17)]]


def edits_one_by_one() -> list:
    return ["rename old_name to new_name everywhere", *[refused_edit(k) for k in range(1, 12)]]


def mcp(k: int) -> tuple:
    return (
        "mcp__crm__lookup_customer",
        {"customer_id": f"C-{1000 + 37 * k}"},
        "MCP error -32603: crm backend unavailable",
    )


def lookups_batched() -> list:
    return ["look up these customers", [mcp(k) for k in range(10)], ("Bash", {"command": "echo done"}, "done")]


def lookups_one_by_one() -> list:
    return ["look up these customers", *[mcp(k) for k in range(10)]]


def unknown(k: int) -> tuple:
    return (f"made_up_tool_{k}", {"x": k}, f"Error: unknown tool made_up_tool_{k}")


def unknown_batched() -> list:
    return ["do it", [unknown(k) for k in range(6)], ("Bash", {"command": "ls"}, "a.py")]


def unknown_one_by_one() -> list:
    return ["do it", *[unknown(k) for k in range(6)]]


def same_read(k: int) -> tuple:
    return ("Read", {"file_path": "/w/notes.md"}, "1\tTODO: nothing yet")


def same_reads_batched() -> list:
    return ["read the notes", [same_read(k) for k in range(8)], ("Bash", {"command": "ls"}, "notes.md")]


def same_reads_one_by_one() -> list:
    return ["read the notes", *[same_read(k) for k in range(8)]]


# (batched, one by one): the same calls as one round, and as one round each
CASES = {
    "edits refused in one batch": (edits_batched, edits_one_by_one),
    "an MCP tool failing for every id of a batch": (lookups_batched, lookups_one_by_one),
    "unknown tools in one batch": (unknown_batched, unknown_one_by_one),
    "one read repeated in one batch": (same_reads_batched, same_reads_one_by_one),
}


@pytest.mark.parametrize("case", CASES)
def test_a_batch_is_one_attempt_at_each_of_its_calls(case):
    batched, _ = CASES[case]
    assert [
        j for j in judged(batched(), tools=CLAUDE["tools"], user_agent=CLAUDE["user_agent"]) if j[1] != "pass"
    ] == []


@pytest.mark.parametrize("case", CASES)
def test_the_same_calls_one_per_round_are_still_a_streak(case):
    _, one_by_one = CASES[case]
    assert first(one_by_one(), "reject", **CLAUDE) is not None


def test_rounds_of_batches_count_as_rounds():
    """Three rounds of the same failing lookups, five a round: three attempts, a warning;
    the fourth round is one more attempt, not five."""
    script = ["look up these customers", *[[mcp(5 * r + k) for k in range(5)] for r in range(4)]]
    phases = [j for j in judged(script, **CLAUDE) if j[0] == "request"]
    by_call = {n + 1: action for n, (_, action, _) in enumerate(phases)}
    assert by_call[10] == "pass" and by_call[15] == "warn"  # the 2nd round, then the 3rd
    assert by_call[20] != "pass"
