"""Each detector's count semantics, the response path (proposed and vetoed calls), exemptions,
and real loops caught by the shipped defaults within 3-5 repeats."""

from __future__ import annotations

import pytest
from loop_traces import DEFAULTS, action, actions, count, detect, paced, propose, trace_of

from gateway.detectors import (
    REGISTRY,
    CycleSettings,
    ErrorRepeatSettings,
    ExactRepeatSettings,
    NoProgressSettings,
    SimilarRepeatSettings,
    ToolRoundsSettings,
    UnknownToolSettings,
    largest_window,
)
from gateway.detectors.base import DetectorSettings, Finding
from gateway.policy.actions import Action
from gateway.trace.model import VETO_MARKER
from gateway.trace.settings import TraceSettings

PASS, WARN, REJECT, TERMINATE = Action.PASS, Action.WARN, Action.REJECT, Action.TERMINATE
A = ("read_file", {"path": "a.py"}, "x = 1")
B = ("grep", {"pattern": "TODO"}, "a.py:3: TODO")
C = ("ls", {"dir": "."}, "a.py b.py")
FAIL = ("write_file", {"path": "a.py", "content": "x = 2"}, "Error: permission denied")
EDIT = ("edit_file", {"path": "a.py", "old": "x = 1", "new": "x = 2"}, "edited a.py")
EDIT2 = ("edit_file", {"path": "a.py", "old": "x = 2", "new": "x = 3"}, "edited a.py again")
D = ("git_status", {}, "clean")
FAIL = ("run", {"cmd": "make"}, "Error: missing target")
VETO = ("run", {"cmd": "make"}, f"{VETO_MARKER} not run: repeated 4 times")


def fail(i: int):
    return ("run", {"cmd": "make"}, f"Error: missing target (attempt {i}, port {4000 + i})")


def new_result(i: int):
    return ("read_file", {"path": "a.py"}, f"x = {i}")


# --- registry and contract ------------------------------------------------------------------


def test_registry_names_in_priority_order():
    ours = ["unknown_tool", "no_progress", "error_repeat", "exact_repeat", "similar_repeat", "cycle", "tool_rounds"]
    assert [name for name in REGISTRY if name in ours] == ours  # other families may sit in between
    for name, entry in REGISTRY.items():
        assert entry.name == name and issubclass(entry.settings, DetectorSettings)


def test_trace_horizon_covers_every_default_window():
    assert largest_window(DEFAULTS) <= TraceSettings().horizon


def test_no_events_no_finding():
    empty = trace_of()
    assert all(detect(name, empty) is None for name in REGISTRY)


# --- exact_repeat ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "settings", "expected"),
    [
        ([A, A, A], ExactRepeatSettings(), 3),
        ([A, B, A, B, A], ExactRepeatSettings(), 3),  # non-consecutive within the window
        ([A, B, A, C, A], ExactRepeatSettings(), 0),  # ... but B and C each brought something new
        ([FAIL, B, FAIL, C, FAIL], ExactRepeatSettings(), 3),  # a failing call retried between new reads
        ([FAIL, EDIT, FAIL, EDIT2, FAIL], ExactRepeatSettings(), 0),  # ... an edit between is progress
        ([A, B, A, C, A], ExactRepeatSettings(reset_on_progress=False), 3),
        ([A, B, A, B, A], ExactRepeatSettings(consecutive=True), 0),
        ([A, A, B, A], ExactRepeatSettings(consecutive=True), 0),  # a different call breaks the run
        ([A, new_result(2), A], ExactRepeatSettings(), 0),  # the result changed: progress
        ([A, new_result(2), A], ExactRepeatSettings(reset_on_progress=False), 3),  # pure argument matching
        ([A, A, B, C, D, ("ls", {"dir": "src"}, "c.py"), ("ls", {"dir": "x"}, "")], ExactRepeatSettings(), 0),
        ([A] * 8, ExactRepeatSettings(), 6),  # bounded by the window
    ],
)
def test_exact_repeat_count(history, settings, expected):
    assert count("exact_repeat", trace_of(*history), settings) == expected


def test_exact_repeat_only_warns_by_default():
    assert action("exact_repeat", trace_of(*[A] * 6)) == WARN


def test_exact_repeat_steps_and_description():
    finding = detect("exact_repeat", trace_of(A, B, A, B, A))
    assert finding == Finding(
        "exact_repeat",
        3,
        (1, 3, 5),
        ("read_file",),
        "`read_file` called 3 times with identical arguments within the last 5 calls",
    )


def test_exempt_tool_is_never_reported():
    settings = ExactRepeatSettings(exempt_tools=frozenset({"read_file"}))
    assert detect("exact_repeat", trace_of(A, A, A), settings) is None


# --- no_progress ----------------------------------------------------------------------------


@pytest.mark.parametrize(("repeats", "expected"), [(2, PASS), (3, WARN), (4, WARN), (5, REJECT), (8, TERMINATE)])
def test_no_progress_default_ladder(repeats, expected):
    assert action("no_progress", trace_of(*[A] * repeats)) == expected


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([A, A, new_result(3), A], 0),  # ... the previous identical call returned something else
        ([A, B, A, B, A], 3),  # interleaved calls that bring nothing new are stepped over
        ([A, ("grep", {"pattern": "x"}, "new hit"), A], 0),  # one that brought something new is progress
        ([FAIL, ("grep", {"pattern": "x"}, "new hit"), FAIL], 2),  # ... unless a failing call is retried
        ([FAIL, EDIT, FAIL], 0),  # ... and the call between is a read, not an edit
        ([A, C, A, C, A, C], 3),
        ([A, A, VETO, A], 3),  # another call in between, vetoed: still no progress for A
    ],
)
def test_no_progress_count(history, expected):
    assert count("no_progress", trace_of(*history)) == expected


def test_repeats_found_before_a_new_read_may_still_block():
    read = ("grep", {"pattern": "x"}, "new hit")
    # A failure, a read, then 5 identical failures in a row: those 5 alone reach reject.
    assert action("no_progress", trace_of(FAIL, read, *[FAIL] * 5)) is REJECT
    # 2 before the read and 3 after: 5 in all, but only a warning.
    assert action("no_progress", trace_of(*[FAIL] * 2, read, *[FAIL] * 3)) is WARN


def test_no_progress_proposed_call_counts_as_a_repeat():
    trace = trace_of(A, A, A, A)
    assert count("no_progress", propose(trace, *A[:2])) == 5
    assert action("no_progress", propose(trace, *A[:2])) == REJECT
    # ... unless the last run of identical calls was broken by a different result.
    assert count("no_progress", propose(trace_of(A, A, new_result(9)), *A[:2])) == 2


def test_no_progress_vetoed_repeats_count_and_their_text_is_never_progress():
    veto_a = ("read_file", {"path": "a.py"}, f"{VETO_MARKER} not run")
    trace = trace_of(A, A, A, A, veto_a, veto_a)
    assert [e.vetoed for e in trace.events] == [False] * 4 + [True, True]
    assert count("no_progress", trace) == 6
    assert count("no_progress", propose(trace, *A[:2])) == 7
    assert action("no_progress", propose(trace_of(A, A, A, A, veto_a, veto_a, veto_a), *A[:2])) == TERMINATE


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("check_background_tasks", {}),
        ("BashOutput", {"bash_id": "shell_1"}),
        ("Bash", {"command": "sleep 60 && tail -n 5 build.log"}),
        ("process", {"action": "poll", "id": "p1"}),
    ],
)
def test_paced_polling_calls_use_the_poll_ladder(tool, args):
    trace = paced(trace_of(*[(tool, args, "still running")] * 9))
    assert trace.events[-1].polling
    assert action("no_progress", trace) == PASS
    assert action("no_progress", paced(trace_of(*[(tool, args, "still running")] * 10))) == WARN
    finding = detect("no_progress", trace)
    assert finding.ladder == "poll" and DEFAULTS["no_progress"].thresholds_for(finding).warn_at == 10


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("check_background_tasks", {}),
        ("BashOutput", {"bash_id": "shell_1"}),
        ("process", {"action": "poll", "id": "p1"}),
    ],
)
@pytest.mark.parametrize(("n", "expected"), [(2, PASS), (3, WARN), (5, REJECT), (8, TERMINATE)])
def test_polls_that_do_not_wait_use_the_normal_ladder(tool, args, n, expected):
    trace = trace_of(*[(tool, args, "still running")] * n)
    assert trace.events[-1].polling and not trace.events[-1].paced
    assert action("no_progress", trace) == expected


def test_no_progress_own_polling_tools():
    settings = NoProgressSettings(polling_tools=frozenset({"wait_for_ci"}))
    trace = paced(trace_of(*[("wait_for_ci", {"pr": 7}, "pending")] * 5))
    assert action("no_progress", trace, settings) == PASS
    assert action("no_progress", trace) == REJECT


# --- error_repeat ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([fail(1), fail(2), fail(3)], 3),  # error text may differ
        ([fail(1), fail(2), ("run", {"cmd": "make"}, "built"), fail(3)], 0),  # a success in between
        ([fail(1), fail(2), B, fail(3)], 0),  # consecutive by default
        ([fail(1), FAIL], 2),
        ([A, A, A], 0),  # repeats that succeed are no_progress's business
    ],
)
def test_error_repeat_count(history, expected):
    assert count("error_repeat", trace_of(*history)) == expected


def test_error_repeat_ladder_and_the_response_path():
    fails = [fail(i) for i in range(4)]
    assert action("error_repeat", trace_of(*fails[:3])) == WARN
    assert action("error_repeat", propose(trace_of(*fails), "run", {"cmd": "make"})) == REJECT
    trace = trace_of(*fails, VETO, VETO, VETO)
    assert count("error_repeat", trace) == 7
    assert action("error_repeat", propose(trace, "run", {"cmd": "make"})) == TERMINATE


def test_error_repeat_needs_a_real_failure():
    assert count("error_repeat", trace_of(("run", {"cmd": "make"}, "built"), VETO, VETO)) == 0


def test_error_repeat_non_consecutive_mode_steps_over_repeating_calls():
    settings = ErrorRepeatSettings(consecutive=False)
    assert count("error_repeat", trace_of(fail(1), C, fail(2), C, fail(3)), settings) == 3
    # ... but not over a fix that changed something.
    edit = ("edit", {"path": "Makefile", "text": "all: build"}, "updated")
    assert count("error_repeat", trace_of(fail(1), edit, fail(2)), settings) == 0


# --- similar_repeat -------------------------------------------------------------------------


def search(q: str, result: str):
    return ("web_search", {"query": q}, result)


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        (
            [
                search("python asyncio timeout error", "No results found for your query."),
                search("python asyncio timeout errors", "No results found for your query."),
                search("python asyncio timeout exception", "No results found for your query."),
            ],
            3,
        ),
        (
            [
                search("python asyncio timeout error", "result list one about asyncio timeouts"),
                search("python asyncio timeout errors", "result list two, different"),
            ],
            0,
        ),  # new results
        (
            [search("python asyncio timeout error", "OK"), search("python asyncio timeout errors", "OK")],
            0,
        ),  # says nothing
        (
            [
                search("python asyncio timeout error", "Error: rate limited"),
                search("rust borrow checker lifetimes", "Error: rate limited"),
            ],
            0,
        ),  # not similar
    ],
)
def test_similar_repeat_count(history, expected):
    assert count("similar_repeat", trace_of(*history)) == expected


@pytest.mark.parametrize("metric", ["indel", "levenshtein", "jaccard3"])
def test_similar_repeat_metrics_agree_on_identical_and_unrelated(metric):
    settings = SimilarRepeatSettings(metric=metric, results="any")
    same = [search("the same long query about configuring nginx reverse proxy", "r")] * 3
    assert count("similar_repeat", trace_of(*same), settings) == 3
    unrelated = [search("configuring nginx reverse proxy", "r"), search("best pizza dough hydration", "r")]
    assert count("similar_repeat", trace_of(*unrelated), settings) == 0


def test_similar_repeat_strict_comparison():
    a, b = search("abcdefghij", "Error"), search("abcdefghiX", "Error")
    sim = 1 - 1 / len('{"query":"abcdefghij"}')  # one substitution in the canonical arguments
    assert count("similar_repeat", trace_of(a, b), SimilarRepeatSettings(metric="levenshtein", min_similarity=sim)) == 2
    strict = SimilarRepeatSettings(metric="levenshtein", min_similarity=sim, strict=True)
    assert count("similar_repeat", trace_of(a, b), strict) == 0


def test_similar_repeat_chain_versus_latest():
    steps = [search("q " + "x" * n, "Error: boom") for n in (20, 24, 28, 32)]
    assert count("similar_repeat", trace_of(*steps), SimilarRepeatSettings(min_similarity=0.9)) == 4
    latest = SimilarRepeatSettings(min_similarity=0.9, compare="latest")
    assert count("similar_repeat", trace_of(*steps), latest) == 3


# --- cycle ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([A, B] * 3, 6),
        ([A, B] * 2, 4),  # reported at two full periods; the default warns at 6
        ([A, B, C] * 2, 6),
        ([A, B, C, D] * 2, 8),
        ([C, A, B, A, B, A], 5),
        ([A, A, A, A], 0),  # one call repeated: exact_repeat's business
        ([A, B, A, C], 0),
    ],
)
def test_cycle_count(history, expected):
    assert count("cycle", trace_of(*history)) == expected


def test_cycle_unstable_results_modes():
    steps = [A, B, new_result(2), B, new_result(3), B]
    assert count("cycle", trace_of(*steps)) == 0  # require (default)
    assert count("cycle", trace_of(*steps), CycleSettings(key="name", stable_results="ignore")) == 6
    capped = CycleSettings(key="name", stable_results="cap", warn_at=4, reject_at=5, terminate_at=6)
    assert count("cycle", trace_of(*steps), capped) == 4
    assert action("cycle", trace_of(*steps * 3), capped) == WARN


def test_cycle_default_warns_only():
    assert action("cycle", trace_of(*[A, B] * 10)) == WARN


def test_cycle_with_a_proposed_call():
    trace = trace_of(A, B, A, B, A)
    assert count("cycle", propose(trace, *B[:2])) == 6


def test_cycle_skips_exempt_and_polling_calls():
    poll = ("check_background_tasks", {}, "running")
    assert count("cycle", trace_of(*[A, poll] * 4)) == 0
    sleep = ("Bash", {"command": "sleep 10"}, "")
    assert count("cycle", trace_of(*[A, sleep] * 4)) == 0


# --- unknown_tool ---------------------------------------------------------------------------


def ghost(i: int):
    return (f"ghost_{i}", {}, f"Error: unknown tool ghost_{i}")


@pytest.mark.parametrize(
    ("history", "tools", "expected"),
    [
        ([ghost(1)], None, 1),
        ([ghost(1), ghost(2), ghost(3)], None, 3),
        ([ghost(1), A, ghost(2)], None, 1),
        ([("made_up", {}, "Error: failed")] * 2, {"read_file"}, 2),  # undeclared and failed
        ([("made_up", {}, "fine")] * 2, {"read_file"}, 0),  # undeclared but it ran: the agent has it
        ([A, A], {"read_file"}, 0),
    ],
)
def test_unknown_tool_count(history, tools, expected):
    assert count("unknown_tool", trace_of(*history, tools=tools)) == expected


def test_unknown_tool_proposed_undeclared_call():
    trace = trace_of(("made_up", {}, "Error: no such tool"), tools={"read_file"})
    assert trace.events[-1].declared is False
    assert action("unknown_tool", propose(trace, "made_up", {})) == WARN
    ghosts = trace_of(*[ghost(i) for i in range(2)], tools={"read_file"})
    assert action("unknown_tool", propose(ghosts, "ghost_9", {})) == REJECT
    # Without a tools declaration a proposed call cannot be known to be unknown.
    assert action("unknown_tool", propose(trace_of(ghost(1), ghost(2)), "ghost_9", {})) == PASS
    assert action("unknown_tool", trace_of(*[ghost(i) for i in range(6)])) == TERMINATE


# --- tool_rounds ----------------------------------------------------------------------------


def test_tool_rounds_counts_rounds_not_calls():
    trace = trace_of(*[[A, B, C]] * 4)
    settings = ToolRoundsSettings(warn_at=4)
    finding = detect("tool_rounds", trace, settings)
    assert finding.count == 4 and finding.steps == (10, 11, 12)
    assert detect("tool_rounds", trace, ToolRoundsSettings(warn_at=5)) is None


# --- what the defaults do with real loops ---------------------------------------------------


def test_defaults_catch_real_loops_within_five_repeats():
    assert actions(trace_of(*[A] * 3)) == {"no_progress": WARN, "exact_repeat": WARN}
    assert actions(trace_of(*[fail(i) for i in range(3)]))["error_repeat"] == WARN
    assert actions(trace_of(*[A, B] * 3))["cycle"] == WARN
    assert actions(trace_of(*[A, B] * 5))["no_progress"] == REJECT
    assert actions(trace_of(*[ghost(i) for i in range(2)]))["unknown_tool"] == WARN
    assert actions(trace_of(*[("check_background_tasks", {}, "running")] * 30))["no_progress"] == TERMINATE
