"""The escalation detectors on traces: ignored_warning (a warned pattern continued after the
warning, however each attempt varies) and vetoed_call (a refused call back after any detour)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from loop_traces import action, count, propose, trace_of

from gateway.policy.actions import REJECT_MARKER, Action
from gateway.trace.model import Trace, WarnedCall

FAILED_EDIT = "ERROR: No replacement was performed, old_str did not appear verbatim in app.py"


def edit(n: int, path: str = "app.py") -> tuple[str, dict, str]:
    return (
        "str_replace_editor",
        {"command": "str_replace", "path": path, "old_str": f"return total + {n}", "new_str": "return total"},
        FAILED_EDIT,
    )


def view(path: str = "app.py") -> tuple[str, dict, str]:
    return ("str_replace_editor", {"command": "view", "path": path}, f"1 def f():\n2     return total + 1  # {path}")


def warned_at(trace: Trace, *steps: int, detector: str = "similar_repeat") -> Trace:
    """``trace`` as the request path builds it after warnings about the calls at ``steps``."""
    ids = {e.step: e.call_id for e in trace.events}
    return replace(trace, warned=tuple(WarnedCall(ids[s], detector) for s in steps))


# --- ignored_warning ------------------------------------------------------------------------


def test_no_warning_no_finding():
    assert count("ignored_warning", trace_of(*(edit(n) for n in range(8)))) == 0


@pytest.mark.parametrize(
    ("after", "expected"), [(1, Action.WARN), (2, Action.REJECT), (4, Action.REJECT), (5, Action.TERMINATE)]
)
def test_each_varied_attempt_after_the_warning_climbs_the_ladder(after, expected):
    trace = warned_at(trace_of(*(edit(n) for n in range(3 + after))), 3)
    assert count("ignored_warning", trace) == after
    assert action("ignored_warning", trace) == expected


def test_views_and_other_files_between_attempts_do_not_break_the_pattern():
    steps = [edit(1), edit(2), edit(3), view(), edit(4), ("read_file", {"path": "b.py"}, "b"), view(), edit(5)]
    trace = warned_at(trace_of(*steps), 3)
    assert count("ignored_warning", trace) == 2


def test_the_proposal_being_judged_counts():
    trace = warned_at(trace_of(edit(1), edit(2), edit(3), edit(4)), 3)
    tool, args, _ = edit(5)
    assert count("ignored_warning", propose(trace, tool, args)) == 2


def test_a_vetoed_attempt_counts():
    veto = (edit(5)[0], edit(5)[1], f"{REJECT_MARKER} refused: you were warned")
    trace = warned_at(trace_of(edit(1), edit(2), edit(3), edit(4), veto, edit(6)), 3)
    assert count("ignored_warning", trace) == 3


def test_an_attempt_that_works_spends_the_warning():
    fixed = (
        "str_replace_editor",
        {"command": "str_replace", "path": "app.py", "old_str": "return total + 1", "new_str": "return total"},
        "The file app.py has been edited.",
    )
    trace = warned_at(trace_of(edit(1), edit(2), edit(3), fixed, edit(7), edit(8)), 3)
    assert count("ignored_warning", trace) == 0


def test_another_target_is_another_pattern():
    trace = warned_at(trace_of(edit(1), edit(2), edit(3), edit(4, path="other.py")), 3)
    assert count("ignored_warning", trace) == 0
    trace = warned_at(trace_of(edit(1), edit(2), edit(3), view()), 3)  # another action on the file
    assert count("ignored_warning", trace) == 0


def test_calls_without_a_target_are_compared_by_their_arguments():
    def npm(flags: str) -> tuple[str, dict, str]:
        return ("bash", {"command": "npm install package-a --registry=https://r.example" + flags}, "npm ERR! timeout")

    trace = warned_at(trace_of(npm(""), npm(" -v"), npm(" -v --force"), npm(" -v --force --no-audit")), 3)
    assert count("ignored_warning", trace) == 1
    other = ("bash", {"command": "pip install requests"}, "Error: no network")
    assert count("ignored_warning", warned_at(trace_of(npm(""), npm(" -v"), npm(" -v --f"), other), 3)) == 0


def test_the_same_result_again_continues_a_no_progress_pattern():
    read = ("read_file", {"path": "a.txt"}, "the same contents of a.txt, unchanged")
    page = ("read_file", {"path": "a.txt", "offset": 100}, "lines 100-200 of a.txt")
    trace = warned_at(trace_of(read, read, read, read, read), 3, detector="no_progress")
    assert count("ignored_warning", trace) == 2
    # a read with another result is progress: the warning was heeded
    assert count("ignored_warning", warned_at(trace_of(read, read, read, page, read), 3, detector="no_progress")) == 0


def test_an_edit_test_cycle_whose_failures_change_is_not_the_warned_pattern_going_on():
    """Warned about a test run failing the same way; then each edit makes it fail otherwise:
    progress, nothing escalates. The same failure again after a further fix is target_failure's
    to count (the same failure after each different fix, on its own ladder), not this one's."""

    def tests(failure: str) -> tuple[str, dict, str]:
        return ("bash", {"command": "pytest -q tests/test_io.py"}, f"Error: 1 failed: {failure}\nexit code 1")

    def fix(n: int) -> tuple[str, dict, str]:
        return (
            "str_replace_editor",
            {"command": "str_replace", "path": "io.py", "old_str": f"v{n}", "new_str": f"v{n + 1}"},
            "The file io.py has been edited.",
        )

    same = tests("AssertionError in test_read")
    steps = [same, same, same, fix(1), tests("KeyError: 'name'"), fix(2), tests("TypeError: bad operand")]
    trace = warned_at(trace_of(*steps), 3, detector="error_repeat")
    assert count("ignored_warning", trace) == 0
    trace = warned_at(trace_of(*steps, fix(3), tests("TypeError: bad operand")), 3, detector="error_repeat")
    assert count("ignored_warning", trace) == 0
    assert count("target_failure", trace) == 2


def test_a_short_identical_success_is_not_the_same_answer():
    write = ("write_file", {"path": "a.txt", "content": "x"}, "OK")
    trace = warned_at(trace_of(write, write, write, write), 3, detector="exact_repeat")
    assert count("ignored_warning", trace) == 0


def test_warnings_that_name_no_pattern_do_not_escalate():
    trace = warned_at(trace_of(edit(1), edit(2), edit(3), edit(4), edit(5)), 3, detector="tool_rounds")
    assert count("ignored_warning", trace) == 0


def test_the_earliest_warning_decides_when_the_pattern_was_warned_again():
    trace = trace_of(*(edit(n) for n in range(7)))
    ids = {e.step: e.call_id for e in trace.events}
    trace = replace(trace, warned=(WarnedCall(ids[3], "similar_repeat"), WarnedCall(ids[5], "ignored_warning")))
    assert count("ignored_warning", trace) == 4


# --- vetoed_call ----------------------------------------------------------------------------


READ = ("read_file", {"path": "a.txt"}, "same")
VETOED = ("read_file", {"path": "a.txt"}, f"{REJECT_MARKER} refused: no progress")


def detour(n: int) -> tuple[str, dict, str]:
    return ("list_dir", {"path": f"dir{n}"}, f"files in dir{n}")


def test_a_return_after_any_detour_continues_the_count():
    trace = trace_of(READ, READ, READ, READ, VETOED, detour(1))
    proposed = propose(trace, "read_file", {"path": "a.txt"})
    assert count("vetoed_call", proposed) == 6
    assert action("vetoed_call", proposed) == Action.REJECT
    trace = trace_of(READ, READ, READ, READ, VETOED, detour(1), VETOED, detour(2), VETOED, detour(3))
    assert action("vetoed_call", propose(trace, "read_file", {"path": "a.txt"})) == Action.TERMINATE


def test_never_vetoed_is_silent():
    trace = trace_of(READ, READ, detour(1), READ, detour(2))
    assert count("vetoed_call", propose(trace, "read_file", {"path": "a.txt"})) == 0


def test_other_calls_after_a_veto_are_free():
    trace = trace_of(READ, READ, READ, READ, VETOED, detour(1))
    assert count("vetoed_call", propose(trace, "read_file", {"path": "b.txt"})) == 0
    assert count("vetoed_call", propose(trace, "list_dir", {"path": "dir2"})) == 0
