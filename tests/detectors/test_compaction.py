"""post_compaction (OpenClaw's postCompactionGuard): the same (tool, args, result) ``window``
times in the first ``window`` calls after a compaction ends the run with
compaction_loop_persisted; changing results, other moments of the run, and the master switch
keep it quiet."""

from __future__ import annotations

from dataclasses import replace

import pytest
from loop_traces import action, count, detect, propose, trace_of

from gateway.detectors import REGISTRY, PostCompactionSettings
from gateway.detectors.compaction import NAME, REASON
from gateway.policy.actions import Action
from gateway.policy.loader import load_policy_text
from gateway.trace.model import VETO_MARKER, Trace

A = ("read_file", {"path": "a.py"}, "x = 1")
B = ("grep", {"pattern": "TODO"}, "a.py:3: TODO")
VETO = ("read_file", {"path": "a.py"}, f"{VETO_MARKER} not run: repeated")


def changed(i: int):
    return ("read_file", {"path": "a.py"}, f"x = {10 + i}")


def compacted(before: list, after: list) -> Trace:
    """``before`` steps, a compaction, then ``after`` steps: the post-compaction history begins
    at the message following the last pre-compaction result (one user turn, then 2 per step)."""
    trace = trace_of(*before, *after)
    return replace(trace, compacted_at=1 + 2 * len(before))


def test_registered_with_window_3_and_terminate_3():
    settings = REGISTRY[NAME].settings()
    assert isinstance(settings, PostCompactionSettings)
    assert (settings.window, settings.warn_at, settings.reject_at, settings.terminate_at) == (3, None, None, 3)
    assert REASON == "compaction_loop_persisted"


def test_terminate_at_follows_the_window_unless_set():
    assert PostCompactionSettings(window=5).terminate_at == 5
    assert PostCompactionSettings(window=5, terminate_at=4).terminate_at == 4
    assert PostCompactionSettings.model_validate({"window": 2}).terminate_at == 2


def test_the_same_loop_right_after_a_compaction_terminates():
    trace = compacted([A, A, A], [A, A, A])
    finding = detect(NAME, trace)
    assert finding is not None and finding.count == 3 and finding.steps == (4, 5, 6)
    assert finding.tools == ("read_file",)
    assert REASON in finding.description and "`read_file`" in finding.description
    assert action(NAME, trace) == Action.TERMINATE


def test_fewer_repeats_than_the_window_do_not_terminate():
    assert count(NAME, compacted([A, A], [A, A])) == 2
    assert action(NAME, compacted([A, A], [A, A])) == Action.PASS
    assert detect(NAME, compacted([A], [A])) is None


def test_changing_results_never_trigger_it():
    assert detect(NAME, compacted([A, A, A], [changed(1), changed(2), changed(3)])) is None
    assert count(NAME, compacted([A], [changed(1), A, A])) == 2  # only identical triples count


def test_only_the_first_window_calls_after_the_compaction_are_watched():
    assert detect(NAME, compacted([A], [B, A, A, A])) is None  # the 4th call is past the window
    settings = PostCompactionSettings(window=4)
    assert action(NAME, compacted([A], [B, A, A, A]), settings) == Action.PASS  # 3 of 4
    assert action(NAME, compacted([A], [A, A, A, A]), settings) == Action.TERMINATE


def test_calls_before_the_compaction_do_not_count():
    assert detect(NAME, compacted([A, A, A, A, A], [A])) is None


def test_without_a_compaction_the_guard_is_off():
    assert detect(NAME, trace_of(A, A, A, A, A, A)) is None


def test_proposed_and_vetoed_calls_have_no_result_to_compare():
    trace = compacted([A], [A, A])
    assert detect(NAME, propose(trace, "read_file", {"path": "a.py"})) is None
    # A vetoed call (our observation) is neither a repeat of the result nor a slot of the window.
    assert count(NAME, compacted([A], [A, VETO, A])) == 2


def test_exempt_tools_are_honoured_by_the_engine():
    policy = load_policy_text(
        "version: 1\ndetectors: {post_compaction: {exempt_tools: [read_file]}}\n", "t.yaml"
    ).resolve()
    judgement = policy.judge(compacted([A], [A, A, A]))
    assert judgement.action < Action.TERMINATE and NAME not in fired(judgement)


# --- the master switch (on unless OpenClaw's loopDetection.enabled is explicitly false) -----

OTHERS_OFF = "\n".join(f"  {name}: false" for name in REGISTRY if name != NAME)


def fired(judgement) -> set[str]:
    return {f.detector for f in judgement.findings}


@pytest.mark.parametrize(
    ("text", "on"),
    [
        ("", True),
        ("enabled: true\n", True),
        (f"detectors:\n{OTHERS_OFF}\n", True),  # every other detector off: the guard stays on
        (f"enabled: true\ndetectors:\n{OTHERS_OFF}\n", True),
        ("enabled: false\n", False),  # the master switch turns it off too
        ("detectors: {post_compaction: false}\n", False),  # as does its own switch
    ],
)
def test_master_switch(text, on):
    policy = load_policy_text("version: 1\n" + text, "t.yaml").resolve()
    judgement = policy.judge(compacted([A, A, A], [A, A, A]))
    assert (judgement.detector == NAME and judgement.action == Action.TERMINATE) is on
    assert (NAME in fired(judgement)) is on
    if text == "enabled: false\n":
        assert judgement.action == Action.PASS and judgement.findings == ()


def test_master_switch_false_turns_every_detector_off_and_agents_may_turn_it_back_on():
    text = "version: 1\nenabled: false\nagents:\n  - match: {header: small-model}\n    enabled: true\n"
    policy = load_policy_text(text, "t.yaml")
    loop = trace_of(*[A] * 8)  # no_progress would terminate this
    assert dict(policy.resolve().detectors) == {}
    assert policy.resolve().judge(loop).action == Action.PASS
    assert policy.resolve(agent="small-model").judge(loop).action == Action.TERMINATE
    assert policy.resolve(agent="small-model").judge(compacted([A], [A, A, A])).detector == NAME


def test_the_terminate_text_names_the_reason_the_tool_and_the_count():
    policy = load_policy_text("version: 1\n", "t.yaml").resolve()
    trace = compacted([A, A], [A, A, A])
    judgement = policy.judge(trace)
    text = policy.render("terminate", judgement.finding, progress=policy.progress(trace))
    assert REASON in text and "`read_file`" in text and "3 times" in text
    zh = load_policy_text("version: 1\nmessages: {language: zh}\n", "t.yaml").resolve()
    text = zh.render("terminate", judgement.finding)
    assert REASON in text and "`read_file`" in text and "3 次" in text
