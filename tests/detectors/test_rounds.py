"""Calls one assistant message issues together were all chosen before any of their results
existed: a batch is one attempt at each of its calls, never a streak. The same calls issued one
per round are a streak, counted as before. Each case is a batch that must stay quiet under the
shipped default policy, and the same calls spread over rounds, which must be caught."""

from __future__ import annotations

import pytest
from runs import judged
from support.classes import (
    CLAUDE,
    edits_batched,
    edits_one_by_one,
    lookup,
    lookups_batched,
    lookups_one_by_one,
    same_reads_batched,
)


def unknown(k: int) -> tuple:
    return (f"made_up_tool_{k}", {"x": k}, f"Error: unknown tool made_up_tool_{k}")


def unknown_batched() -> list:
    return ["do it", [unknown(k) for k in range(6)], ("Bash", {"command": "ls"}, "a.py")]


def unknown_one_by_one() -> list:
    return ["do it", *[unknown(k) for k in range(6)]]


def same_reads_one_by_one() -> list:
    return ["read the notes", *same_reads_batched()[1]]


# (batched, one by one): the same calls as one round, and as one round each
CASES = {
    "edits refused in one batch": (edits_batched, edits_one_by_one),
    "an MCP tool failing for every id of a batch": (lookups_batched, lookups_one_by_one),
    "unknown tools in one batch": (unknown_batched, unknown_one_by_one),
    "one read repeated in one batch": (same_reads_batched, same_reads_one_by_one),
}


def actions(script: list) -> list[tuple[str, str, str | None]]:
    return [j for j in judged(script, **CLAUDE.kwargs()) if j[1] != "pass"]


@pytest.mark.parametrize("case", CASES)
def test_a_batch_is_one_attempt_at_each_of_its_calls(case):
    batched, _ = CASES[case]
    assert actions(batched()) == []


@pytest.mark.parametrize("case", CASES)
def test_the_same_calls_one_per_round_are_still_a_streak(case):
    _, one_by_one = CASES[case]
    assert any(action in ("reject", "terminate") for _, action, _ in actions(one_by_one()))


def test_rounds_of_batches_count_as_rounds():
    """Three rounds of the same failing lookups, five a round: three attempts, a warning; a
    fourth round is one more attempt, not five."""
    script = ["look up these customers", *[[lookup(5 * r + k) for k in range(5)] for r in range(4)]]
    phases = [j for j in judged(script, **CLAUDE.kwargs()) if j[0] == "request"]
    by_call = {n + 1: action for n, (_, action, _) in enumerate(phases)}
    assert by_call[10] == "pass" and by_call[15] == "warn"  # the 2nd round, then the 3rd
    assert by_call[20] != "pass"
