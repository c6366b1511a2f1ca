"""Agent loops the detectors read through what a call does: busy polls of a background job, one
tool failing the same way whatever it is asked, and blocks aimed only at the pattern they stop
(never at the call that breaks it). Each loop beside the healthy runs shaped like it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from loop_traces import DEFAULTS, action, detect, paced, propose, trace_of
from runs import conversation, first, judged, strongest
from support.varying import (
    edit_test_cycle_changing_output,
    failing_tests_one_by_one,
    maze_batch,
    missing_modules,
    payment_methods,
)

from gateway.policy.actions import Action
from gateway.policy.engine import aimed_at
from gateway.policy.loader import load_shipped_policy
from gateway.trace.builder import build_trace, proposed_events
from gateway.trace.model import VETO_MARKER, Trace, WarnedCall

PASS, WARN, REJECT, TERMINATE = Action.PASS, Action.WARN, Action.REJECT, Action.TERMINATE

# --- 6. background jobs polled without pause --------------------------------------------------


def bash_output(n: int, changing: bool = False) -> tuple[str, dict, str]:
    """Claude Code's BashOutput on a background shell: "running" with a new timestamp each time."""
    out = f"epoch {n} loss {2.5 - n * 0.1:.2f}" if changing else "Building..."
    return (
        "BashOutput",
        {"bash_id": "bash_1"},
        f"<status>running</status>\n<stdout>\n{out}\n</stdout>\n<timestamp>2026-03-01T10:{n:02d}:07.{n}12Z</timestamp>",
    )


@pytest.mark.parametrize(("calls", "expected"), [(2, PASS), (3, WARN), (4, WARN), (5, REJECT), (8, TERMINATE)])
def test_a_poll_asked_again_without_waiting_escalates_on_the_normal_ladder(calls, expected):
    trace = trace_of(*[bash_output(i) for i in range(calls)])
    assert not trace.events[-1].paced
    assert action("no_progress", trace) == expected


@pytest.mark.parametrize(("calls", "expected"), [(9, PASS), (10, WARN), (20, REJECT), (30, TERMINATE)])
def test_a_poll_that_waits_first_keeps_the_poll_ladder(calls, expected):
    trace = paced(trace_of(*[bash_output(i) for i in range(calls)]))
    assert action("no_progress", trace) == expected
    assert detect("no_progress", trace).ladder == "poll"


@pytest.mark.parametrize("mark", [lambda t: t, paced], ids=["busy", "paced"])
def test_a_poll_whose_output_changes_is_never_counted(mark):
    trace = mark(trace_of(*[bash_output(i, changing=True) for i in range(30)]))
    assert detect("no_progress", trace) is None


def test_the_paced_mark_is_read_from_the_latest_call_only():
    """Earlier polls waited, this one did not: the busy poll is judged as the busy loop it is."""
    trace = paced(trace_of(*[bash_output(i) for i in range(5)]))
    busy = replace(trace, events=(*trace.events[:-1], replace(trace.events[-1], paced=False)))
    assert action("no_progress", trace) == PASS
    assert action("no_progress", busy) == REJECT


def test_a_busy_poll_through_the_shipped_policy_is_ended_by_the_eighth():
    script = ["wait for the build", *[bash_output(i) for i in range(12)]]
    assert first(script, "warn") == (3, "no_progress")
    assert first(script, "terminate") == (8, "no_progress")


def test_a_sleeping_shell_poll_through_the_shipped_policy_stays_quiet():
    script = ["wait for the build", *[("Bash", {"command": "sleep 30 && tail -n 1 build.log"}, "Building...")] * 9]
    assert strongest(script) == PASS


# --- 7. the same error whatever the arguments -------------------------------------------------

DATASETS = [
    "census-2020",
    "weather-daily",
    "flights-eu",
    "retail-sales",
    "air-quality",
    "traffic-counts",
    "energy-use",
    "crime-stats",
    "housing-prices",
    "school-grades",
    "rainfall",
    "bus-routes",
]


def downloads_left(n: int = 11):
    """An MCP tool whose quota is spent: every item answers the same."""
    return [
        "download the datasets",
        *[
            ("mcp__data__download", {"dataset": d}, "Error: no downloads left on this plan (quota resets monthly)")
            for d in DATASETS[:n]
        ],
    ]


def missing_files_guessed():
    """A read tool asked for one guessed path after another; each refusal names its path."""
    paths = [
        "config.yaml",
        "config.yml",
        "conf/config.yaml",
        "settings.yaml",
        "app.yaml",
        "cfg/app.yml",
        "etc/app.yaml",
        "deploy/app.yaml",
        "config/app.yaml",
        "configs/main.yaml",
    ]
    return [
        "read the app config",
        *[("read_file", {"path": p}, f"Error: ENOENT: no such file or directory, open '{p}'") for p in paths],
    ]


def inventory_each_failing_its_own_way():
    """A sweep over items, each refused for its own reason (not an echo of what was asked)."""
    answers = [
        "Error: out of stock since March",
        "Error: discontinued by the maker",
        "Error: recalled for safety",
        "Error: only sold in stores",
        "Error: price on request",
        "Error: awaiting customs clearance",
        "Error: listing under review",
    ]
    return [
        "check the products",
        *[("check_inventory", {"sku": f"SKU-{chr(65 + i)}X"}, a) for i, a in enumerate(answers)],
    ]


def mcp_maze_batch():
    """A batch over numbered items through an MCP tool: the answer names each item's number."""
    return [
        "solve mazes 2 to 10",
        *[("mcp__mazes__solve", {"maze": i}, f"Error: maze {i} has no path from S to E") for i in range(2, 11)],
    ]


SAME_ERROR_LOOPS = {
    "an MCP tool out of quota, item after item": downloads_left,
    "guessed file paths, each missing": missing_files_guessed,
}

SAME_ERROR_HEALTHY = {
    "a sweep over items each failing its own way": inventory_each_failing_its_own_way,
    "running the failing tests one by one": failing_tests_one_by_one,
    "installing one missing module, then re-running": missing_modules,
    "a batch over ids (shell)": maze_batch,
    "a batch over numbered items (MCP)": mcp_maze_batch,
    "an edit/test cycle whose output changes": edit_test_cycle_changing_output,
    "a payment retried with other methods": payment_methods,
}


@pytest.mark.parametrize("script", SAME_ERROR_LOOPS.values(), ids=SAME_ERROR_LOOPS.keys())
def test_one_tool_failing_the_same_way_for_different_arguments_is_a_failing_target(script):
    assert first(script(), "warn") == (3, "target_failure")
    assert first(script(), "reject") == (6, "target_failure")
    assert first(script(), "terminate") == (9, "target_failure")


def test_the_next_item_proposed_to_a_tool_out_of_quota_is_refused():
    phases = judged(downloads_left(7))
    assert phases[10] == ("response", "reject", "target_failure")  # the 6th item, as proposed


@pytest.mark.parametrize("script", SAME_ERROR_HEALTHY.values(), ids=SAME_ERROR_HEALTHY.keys())
def test_failures_that_differ_or_belong_to_a_batch_stay_quiet(script):
    assert [j for j in judged(script()) if j[1] != "pass"] == []


def test_the_same_error_counts_the_things_tried_not_the_attempts():
    """Refused edits of one file are one thing tried (target_failure counts those attempts); an
    edit of another file after them is the second, not the ninth attempt."""
    script = ["raise the timeout", *[refused_edit(i) for i in range(8)]]
    trace = trace_of(*script[1:])
    other = propose(trace, "Edit", {"file_path": "/repo/other.py", "old_string": "a = 1", "new_string": "a = 2"})
    assert detect("target_failure", other).count == 2
    assert action("target_failure", other) == PASS


def test_the_same_error_through_reads_between_only_warns():
    steps = []
    for d in DATASETS[:9]:
        steps += [
            ("mcp__data__download", {"dataset": d}, "Error: no downloads left on this plan"),
            ("list_files", {"dir": f"/data/{d}"}, f"{d}.csv.part\n{d}.meta"),
        ]
    assert first(["download", *steps], "warn")[1] == "target_failure"
    assert strongest(["download", *steps]) == WARN


# --- 9. stop the loop, not the way out ---------------------------------------------------------


def refused_edit(i: int, path: str = "/repo/client.py") -> tuple[str, dict, str]:
    old = f"timeout = {['30', '30.0', ' 30', '30  # seconds'][i % 4]}{' ' * (i // 4)}"
    return (
        "Edit",
        {"file_path": path, "old_string": old, "new_string": "timeout = 60"},
        f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>",
    )


def as_gateway(script: list[Any]) -> tuple[list[Any], tuple[WarnedCall, ...]]:
    """The script as the gateway leaves it: each call refused on the response path carries the
    veto observation instead of its result, and each warning (or reject) on the request path is
    remembered as the session state does (Trace.warned)."""
    policy = load_shipped_policy("default").resolve()
    settings = policy.trace_settings
    done: list[Any] = []
    warned: tuple[WarnedCall, ...] = ()
    for item in script:
        if isinstance(item, str):
            done.append(item)
            continue
        tool, args, result = item
        before = replace(build_trace(conversation(done)[0], settings), warned=warned)
        call = conversation([*done, item])[1][-1]
        proposal = policy.judge_proposal(before.with_events(proposed_events(before, (call,), settings)))
        if proposal.action >= REJECT:
            result = f"{VETO_MARKER} refused: {proposal.finding.description}"
        done.append((tool, args, result))
        after = replace(build_trace(conversation(done)[0], settings), warned=warned)
        judgement = policy.judge(after)
        if judgement.action in (WARN, REJECT) and judgement.finding is not None:
            event = next(e for e in reversed(after.events) if e.step in judgement.finding.steps)
            if all(w.call_id != event.call_id for w in warned):
                warned += (WarnedCall(event.call_id, judgement.finding.detector),)
    return done, warned


def proposal_of(done: list[Any], warned: tuple[WarnedCall, ...], step: tuple[str, dict, str]):
    policy = load_shipped_policy("default").resolve()
    settings = policy.trace_settings
    trace = replace(build_trace(conversation(done)[0], settings), warned=warned)
    call = conversation([*done, step])[1][-1]
    return policy.judge_proposal(trace.with_events(proposed_events(trace, (call,), settings)))


def request_after(done: list[Any], warned: tuple[WarnedCall, ...], step: tuple[str, dict, str]):
    policy = load_shipped_policy("default").resolve()
    return policy.judge(replace(build_trace(conversation([*done, step])[0], policy.trace_settings), warned=warned))


READ = ("Read", {"file_path": "/repo/a.py"}, "x = 1\n")
MAKE = ("run", {"cmd": "make build"}, "Error: missing target 'build'")
GHOST = ("ghost_tool", {"q": "x"}, "Error: unknown tool ghost_tool")

# detector that stops the loop -> (the loop's calls, a recovery call of another kind, the loop resumed)
BREAKS = {
    "no_progress": ([READ] * 8, ("Write", {"file_path": "/repo/b.py", "content": "y = 2\n"}, "File written"), READ),
    "error_repeat": (
        [MAKE] * 8,
        (
            "Edit",
            {"file_path": "Makefile", "old_string": "all:", "new_string": "build:"},
            "The file Makefile has been updated.",
        ),
        MAKE,
    ),
    "target_failure": (
        [refused_edit(i) for i in range(8)],
        ("Write", {"file_path": "/repo/client.py", "content": "timeout = 60\n"}, "File written"),
        refused_edit(9),
    ),
    "target_failure (another file)": (
        [refused_edit(i) for i in range(8)],
        refused_edit(0, "/repo/settings.py")[:2] + ("The file has been updated.",),
        refused_edit(10),
    ),
    "target_failure (the same error whatever the arguments)": (
        downloads_left(8)[1:],
        ("mcp__billing__upgrade", {"plan": "pro"}, "Plan upgraded to pro"),
        (
            "mcp__data__download",
            {"dataset": "rainfall"},
            "Error: no downloads left on this plan (quota resets monthly)",
        ),
    ),
    "unknown_tool": ([GHOST] * 8, ("grep", {"pattern": "ghost"}, "no matches"), GHOST),
    "cross_turn": ([MAKE, "please try again"] * 6, READ, MAKE),
}


@pytest.mark.parametrize(("loop", "recovery", "resumed"), BREAKS.values(), ids=BREAKS.keys())
def test_a_recovery_of_another_kind_passes_and_the_resumed_loop_is_blocked_again(loop, recovery, resumed):
    done, warned = as_gateway(["fix it", *loop])
    assert proposal_of(done, warned, loop[-1] if isinstance(loop[-1], tuple) else loop[-2]).action >= REJECT
    assert proposal_of(done, warned, recovery).action < REJECT
    assert request_after(done, warned, recovery).action < REJECT
    after, warned = as_gateway(["fix it", *loop, recovery])
    # Refused as proposed; or, where only its result shows it is the pattern again (the same
    # error for another item), once it ran.
    assert max(proposal_of(after, warned, resumed).action, request_after(after, warned, resumed).action) >= REJECT


def test_a_write_of_the_whole_file_after_refused_edits_passes():
    done, warned = as_gateway(["raise the timeout", *[refused_edit(i) for i in range(8)]])
    write = ("Write", {"file_path": "/repo/client.py", "content": "timeout = 60\n"}, "File written")
    # A proposal is only ever refused or let through: a write of the file does what none of the
    # refused edits did, a new kind of action on the pattern's file, never refused.
    assert proposal_of(done, warned, write).action < REJECT
    assert request_after(done, warned, write).action == PASS


# The engine's rule itself, on findings whose steps leave the latest call out or whose proposed
# call is a new kind of action of the pattern's one tool.


def shell_reads_failing() -> Trace:
    """`cat`, `head`, `sed -n` of one missing file: one failing target, read actions."""
    commands = ["cat notes.txt", "head notes.txt", "sed -n 1,5p notes.txt", "tail notes.txt"] * 2
    trace = trace_of(*[("bash", {"command": c}, "No such file or directory\nexit code 1") for c in commands])
    return replace(trace, events=tuple(replace(e, action="read", target="$ notes.txt") for e in trace.events))


@pytest.mark.parametrize(
    ("command", "kind", "blocked"),
    [
        ("cat ./notes.txt", "read", True),  # another read of the missing file: the next attempt
        ("touch notes.txt", "shell", False),  # creating it: a new kind of action, the way out
    ],
)
def test_a_proposal_of_a_new_kind_of_action_on_the_pattern_is_not_blocked(command, kind, blocked):
    trace = shell_reads_failing()
    proposed = propose(trace, "bash", {"command": command})
    proposed = replace(
        proposed, events=(*proposed.events[:-1], replace(proposed.events[-1], action=kind, target="$ notes.txt"))
    )
    finding = detect("target_failure", proposed)
    assert finding is not None and finding.count == 9
    assert aimed_at(finding, proposed) is blocked
    judgement = load_shipped_policy("default").resolve().judge_proposal(proposed)
    assert (judgement.action >= REJECT) is blocked


@pytest.mark.parametrize(
    ("steps", "aimed"),
    [
        ((1, 2, 9), True),  # the latest call is one of the pattern's
        ((1, 2, 3), False),  # it is not: a detour, at most warned about
        ((), True),  # a finding naming no calls (a rule about the turn) is left alone
    ],
)
def test_a_block_needs_the_latest_call_in_the_pattern(steps, aimed):
    trace = trace_of(*[READ] * 9)
    finding = replace(detect("no_progress", trace), steps=steps)
    assert aimed_at(finding, trace) is aimed


def test_a_terminate_not_aimed_at_the_latest_call_is_capped_to_a_warning():
    from gateway.detectors.base import Detector, DetectorSettings, Finding
    from gateway.policy.engine import build_plan, evaluate

    def elsewhere(trace: Trace, _settings: DetectorSettings) -> Finding:
        return Finding("elsewhere", 9, (1, 2), ("Read",), "an old pattern")

    registry = {"elsewhere": Detector("elsewhere", elsewhere, DetectorSettings)}
    ladder = {"elsewhere": DetectorSettings(warn_at=1, reject_at=2, terminate_at=3)}
    judgement = evaluate(build_plan(ladder, frozenset(), registry), trace_of(*[READ] * 3), cap=TERMINATE, shadow=False)
    assert judgement.action == WARN and judgement.would == WARN


def test_shipped_target_failure_counts_across_arguments_by_default():
    assert DEFAULTS["target_failure"].across_arguments is True
