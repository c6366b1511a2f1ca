"""Thresholds a block writes out of order are refused unless ``allow_reorder: true``; then, and
for an agents entry that breaks the order by changing one field, they are raised and logged."""

from __future__ import annotations

import pytest
from policy_fakes import PollSettings, RepeatSettings
from structlog.testing import capture_logs

from gateway.policy.schema import PolicyError
from gateway.policy.thresholds import ladders, ordered


@pytest.mark.parametrize(
    ("given", "fixed"),
    [
        ([3, 4, 5], [3, 4, 5]),
        ([5, 5, 5], [5, 6, 7]),
        ([10, 20, 15], [10, 20, 21]),
        ([10, 5, 3], [10, 11, 12]),
        ([10, None, 4], [10, None, 11]),  # an off threshold is skipped, not compared
        ([None, 8, 2], [None, 8, 9]),
        ([None, None, 1], [None, None, 1]),
    ],
)
def test_ordered_raises_later_thresholds(given, fixed):
    assert ordered(given) == fixed


def test_ladders_are_found_by_name():
    assert ladders(RepeatSettings) == (("warn_at", "reject_at", "terminate_at"),)
    assert ladders(PollSettings) == (
        ("warn_at", "reject_at", "terminate_at"),
        ("poll_warn_at", "poll_reject_at", "poll_terminate_at"),
    )


def test_global_correction_is_applied_and_logged(compile_policy):
    with capture_logs() as logs:
        policy = compile_policy(
            "allow_reorder: true\ndetectors:\n  repeat: {warn_at: 5, reject_at: 5, terminate_at: 3}"
        )
    s = policy.resolve().detectors["repeat"]
    assert (s.warn_at, s.reject_at, s.terminate_at) == (5, 6, 7)
    (event,) = [e for e in logs if e["event"] == "policy.thresholds_reordered"]
    assert event["log_level"] == "warning"
    assert event["file"] == "policies/t.yaml" and event["detector"] == "repeat"
    assert (event["old"], event["new"]) == ([5, 5, 3], [5, 6, 7])
    assert event["agent"] is None


def test_poll_ladder_is_corrected_generically(compile_policy):
    with capture_logs() as logs:
        policy = compile_policy("allow_reorder: true\ndetectors:\n  poll: {poll_warn_at: 6, poll_terminate_at: 6}\n")
    s = policy.resolve().detectors["poll"]
    assert (s.poll_warn_at, s.poll_reject_at, s.poll_terminate_at) == (6, None, 7)
    assert (s.warn_at, s.reject_at, s.terminate_at) == (10, 20, 30)  # the other ladder untouched
    (event,) = [e for e in logs if e["event"] == "policy.thresholds_reordered"]
    assert event["fields"] == ["poll_warn_at", "poll_reject_at", "poll_terminate_at"]


def test_ordered_thresholds_log_nothing(compile_policy):
    with capture_logs() as logs:
        compile_policy("detectors:\n  repeat: {warn_at: 2, reject_at: 9, terminate_at: null}\n")
    assert not [e for e in logs if e["event"] == "policy.thresholds_reordered"]


def test_agent_override_that_breaks_the_order_is_corrected_for_that_agent_only(compile_policy):
    with capture_logs() as logs:
        policy = compile_policy("""\
            agents:
              - id: patient
                match: {header: patient}
                detectors:
                  repeat: {warn_at: 6}
              - match: {header: other}
                mode: shadow
            """)
    patient = policy.resolve(agent="patient").detectors["repeat"]
    assert (patient.warn_at, patient.reject_at, patient.terminate_at) == (6, 7, 8)
    glob = policy.resolve().detectors["repeat"]
    assert (glob.warn_at, glob.reject_at, glob.terminate_at) == (3, 4, 5)
    events = [e for e in logs if e["event"] == "policy.thresholds_reordered"]
    assert [(e["agent"], e["old"], e["new"]) for e in events] == [("patient", [6, 4, 5], [6, 7, 8])]


def test_threshold_beyond_the_window_is_logged(compile_policy):
    with capture_logs() as logs:
        compile_policy("detectors:\n  repeat: {window: 4, reject_at: 4, terminate_at: 9}\n")
    (event,) = [e for e in logs if e["event"] == "policy.threshold_unreachable"]
    found = (event["detector"], event["field"], event["value"], event["window"])
    assert found == ("repeat", "terminate_at", 9, 4)


def test_horizon_is_raised_to_the_widest_window(compile_policy):
    with capture_logs() as logs:
        policy = compile_policy("""\
            detectors:
              repeat: {window: 100}
            agents:
              - match: {header: wide}
                detectors:
                  poll: {window: 300}
              - match: {header: narrow}
                normalize: {horizon: 10}
            """)
    assert policy.resolve().trace_settings.horizon == 100  # implicit: raised silently
    assert policy.resolve(agent="wide").trace_settings.horizon == 300
    assert policy.resolve(agent="narrow").trace_settings.horizon == 100  # explicit: raised, logged
    (event,) = [e for e in logs if e["event"] == "policy.horizon_raised"]
    assert (event["old"], event["new"], event["agent"]) == (10, 100, "agents[1]")


def test_a_terminate_status_clients_retry_is_logged(compile_policy):
    with capture_logs() as logs:
        compile_policy("interventions:\n  terminate: {mode: error, status: 409}\n")
    (event,) = [e for e in logs if e["event"] == "policy.terminate_status_retried"]
    assert event["status"] == 409


def test_a_written_out_of_order_ladder_is_an_error_naming_its_keys(compile_policy):
    with pytest.raises(PolicyError) as refused:
        compile_policy("detectors:\n  repeat: {warn_at: 8, reject_at: 5, terminate_at: 3}\n  poll: {poll_warn_at: 0}\n")
    text = str(refused.value)
    assert "detectors.repeat.warn_at: thresholds must increase" in text
    assert "detectors.poll.poll_warn_at: must be a count of at least 1" in text
