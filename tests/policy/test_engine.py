"""Judging: ladder, priority, cap, shadow, exemptions, fail-open."""

from __future__ import annotations

import pytest
from policy_fakes import BOOM_REGISTRY, REGISTRY, RepeatSettings, detect_repeat, make_trace
from structlog.testing import capture_logs

from gateway.detectors.base import Detector
from gateway.policy import Action, current_stats
from gateway.trace.model import Trace

ONLY_REPEAT = "detectors: {poll: false, always: false}\n"


@pytest.mark.parametrize(
    ("repeats", "action"),
    [
        (1, Action.PASS),
        (2, Action.PASS),
        (3, Action.WARN),
        (4, Action.REJECT),
        (5, Action.TERMINATE),
        (9, Action.TERMINATE),
    ],
)
def test_ladder(compile_policy, repeats, action):
    judgement = compile_policy(ONLY_REPEAT).resolve().judge(make_trace(*["ls"] * repeats))
    assert (judgement.action, judgement.would) == (action, action)
    assert (judgement.detector == "repeat") == (action > Action.PASS)


def test_empty_trace_passes_without_running_detectors(compile_policy):
    judgement = compile_policy("").resolve().judge(make_trace())
    assert judgement.action is Action.PASS and judgement.findings == ()


def test_findings_below_every_threshold_are_kept_but_decide_nothing(compile_policy):
    judgement = compile_policy(ONLY_REPEAT).resolve().judge(make_trace("ls", "ls"))
    assert judgement.action is Action.PASS and judgement.finding is None
    assert [f.count for f in judgement.findings] == [2]


@pytest.mark.parametrize(
    ("max_action", "applied"),
    [
        ("warn", Action.WARN),
        ("reject", Action.REJECT),
        ("terminate", Action.TERMINATE),
    ],
)
def test_max_action_caps_the_applied_action_not_the_would(compile_policy, max_action, applied):
    eff = compile_policy(ONLY_REPEAT + f"max_action: {max_action}\n").resolve()
    judgement = eff.judge(make_trace(*["ls"] * 5))
    assert (judgement.action, judgement.would) == (applied, Action.TERMINATE)
    assert judgement.shadow is False
    assert judgement.finding.detector == "repeat"


def test_shadow_applies_nothing_and_reports_what_it_would_do(compile_policy):
    eff = compile_policy(ONLY_REPEAT + "mode: shadow\nmax_action: reject\n").resolve()
    judgement = eff.judge(make_trace(*["ls"] * 5))
    assert (judgement.action, judgement.would) == (Action.PASS, Action.TERMINATE)
    assert judgement.shadow is True
    assert judgement.finding is not None


def test_the_strongest_finding_decides(compile_policy):
    # poll's generic ladder (10/20/30) says PASS for 4 calls; repeat says REJECT.
    eff = compile_policy("detectors: {always: false}\n").resolve()
    judgement = eff.judge(make_trace(*["ls"] * 4))
    assert judgement.action is Action.REJECT and judgement.detector == "repeat"
    assert [f.detector for f in judgement.findings] == ["repeat", "poll"]


@pytest.mark.parametrize(
    ("order", "winner"),
    [
        (("repeat", "poll"), "repeat"),
        (("poll", "repeat"), "poll"),
    ],
)
def test_ties_go_to_registry_priority(compile_policy, order, winner):
    registry = {name: REGISTRY[name] for name in order}
    eff = compile_policy(
        "detectors:\n  poll: {warn_at: 3, reject_at: 4, terminate_at: 5}\n", registry=registry
    ).resolve()
    judgement = eff.judge(make_trace(*["ls"] * 4))
    assert judgement.action is Action.REJECT and judgement.detector == winner


@pytest.mark.parametrize(
    ("calls", "action"),
    [
        (["poll"] * 2, Action.WARN),
        (["poll"] * 3, Action.WARN),
        (["poll"] * 4, Action.TERMINATE),
        (["ls"] * 4, Action.PASS),
    ],
)
def test_detector_chosen_ladder_via_thresholds_for(compile_policy, calls, action):
    eff = compile_policy("detectors: {repeat: false, always: false}\n").resolve()
    assert eff.judge(make_trace(*calls)).action is action


def test_global_exemption_skips_every_detector(compile_policy):
    eff = compile_policy("exempt_tools: [check_background_tasks]\n").resolve()
    judgement = eff.judge(make_trace(*["check_background_tasks"] * 9))
    assert judgement.action is Action.PASS and judgement.findings == ()
    assert eff.judge(make_trace(*["ls"] * 9)).action is Action.TERMINATE


def test_exemption_looks_at_the_latest_call_only(compile_policy):
    eff = compile_policy(ONLY_REPEAT + "exempt_tools: [wait]\n").resolve()
    assert eff.judge(make_trace("ls", "ls", "ls", "ls", "wait")).findings == ()
    assert eff.judge(make_trace("wait", "ls", "ls", "ls")).action is Action.WARN


def test_per_detector_exemption_skips_only_that_detector(compile_policy):
    eff = compile_policy("detectors:\n  repeat: {exempt_tools: [tail_log]}\n").resolve()
    judgement = eff.judge(make_trace(*["tail_log"] * 5))
    assert {f.detector for f in judgement.findings} == {"poll", "always"}
    assert judgement.action is Action.PASS


def test_disabled_detectors_do_not_run(compile_policy):
    eff = compile_policy("detectors: {repeat: false, poll: false, always: false}\n").resolve()
    assert eff.detectors == {} and eff.judge(make_trace(*["ls"] * 9)).findings == ()


def test_fail_open_counts_logs_and_continues(compile_policy):
    eff = compile_policy("", registry=BOOM_REGISTRY).resolve()
    stats = current_stats()  # outside any app: the unattributed counters
    before, before_boom = stats.fail_open_errors, stats.errors_by_detector["boom"]
    with capture_logs() as logs:
        judgement = eff.judge(make_trace(*["ls"] * 5))
    assert judgement.action is Action.TERMINATE and judgement.detector == "repeat"
    assert stats.fail_open_errors == before + 1
    assert stats.errors_by_detector["boom"] == before_boom + 1
    (event,) = [e for e in logs if e["event"] == "policy.detector_failed"]
    assert event["detector"] == "boom" and event["log_level"] == "error" and event["exc_info"]


def test_a_thresholds_hook_that_raises_fails_open_too(compile_policy):
    class BadSettings(RepeatSettings):
        def thresholds_for(self, finding):
            raise KeyError("oops")

    registry = {"repeat": Detector("repeat", detect_repeat, BadSettings)}
    eff = compile_policy("", registry=registry).resolve()
    before = current_stats().fail_open_errors
    assert eff.judge(make_trace(*["ls"] * 5)).action is Action.PASS
    assert current_stats().fail_open_errors == before + 1


def test_judge_runs_the_registry_the_policy_was_loaded_with(compile_policy):
    calls: list[Trace] = []

    def spy(trace, settings):
        calls.append(trace)
        return detect_repeat(trace, settings)

    registry = {"repeat": Detector("repeat", spy, RepeatSettings)}
    eff = compile_policy("", registry=registry).resolve()
    judgement = eff.judge(make_trace(*["ls"] * 3))
    assert len(calls) == 1 and judgement.action is Action.WARN


def test_proposed_events_are_judged_like_executed_ones(compile_policy):
    eff = compile_policy(ONLY_REPEAT).resolve()
    history = make_trace("ls", "ls", "ls")
    proposed = make_trace("ls", "ls", "ls", "ls").events[-1:]
    assert eff.judge(history.with_events(proposed)).action is Action.REJECT


def test_judgements_are_immutable(compile_policy):
    judgement = compile_policy("").resolve().judge(make_trace("ls"))
    with pytest.raises(AttributeError):
        judgement.action = Action.TERMINATE  # type: ignore[misc]


def test_master_switch_turns_every_detector_off(compile_policy):
    policy = compile_policy("""\
        enabled: false
        agents:
          - match: {header: guarded}
            enabled: true
        """)
    assert policy.resolve().detectors == {}
    assert policy.resolve().judge(make_trace(*["ls"] * 9)).findings == ()
    assert policy.resolve().detector_settings["repeat"].enabled is True  # kept, for `check`
    assert policy.resolve(agent="guarded").judge(make_trace(*["ls"] * 5)).action is Action.TERMINATE
    opt_out = compile_policy("agents:\n  - match: {header: batch}\n    enabled: false\n")
    assert opt_out.resolve(agent="batch").detectors == {}
    assert opt_out.resolve().detectors != {}


@pytest.mark.parametrize(
    ("repeat_ladder", "runs_on_proposals"),
    [
        ("{warn_at: 3, reject_at: 4, terminate_at: 5}", True),
        ("{warn_at: 3, reject_at: null, terminate_at: 5}", True),
        ("{warn_at: 3, reject_at: null, terminate_at: null}", False),  # can only warn
    ],
)
def test_proposals_are_judged_only_by_detectors_that_can_block(compile_policy, repeat_ladder, runs_on_proposals):
    eff = compile_policy(f"detectors: {{poll: false, always: false, repeat: {repeat_ladder}}}\n").resolve()
    trace = make_trace(*["ls"] * 5)
    assert eff.judge(trace).finding is not None  # the request path still sees the warning
    proposal = eff.judge_proposal(trace)
    assert (proposal.finding is not None) == runs_on_proposals
    if runs_on_proposals:
        assert proposal == eff.judge(trace)  # same refusal as a full judgement


def test_poll_ladders_count_as_blocking(compile_policy):
    eff = compile_policy("detectors: {always: false, repeat: false}\n").resolve()
    assert [step.name for step in eff.blocking_plan] == ["poll"]
