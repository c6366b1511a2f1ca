"""One ``loop_intervention`` event per finding acted on, from a real agent loop through a real
gateway, captured with structlog's testing helpers."""

from __future__ import annotations

from datetime import UTC

import pytest
from structlog.testing import capture_logs
from support.agent import Agent
from support.guarded import guarded
from support.looping import stubborn
from support.policies import ladder_policy

from gateway.audit.events import intervention
from gateway.detectors.base import Finding
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement

FIELDS = {
    "time",
    "session",
    "run",
    "agent",
    "policy",
    "detector",
    "action",
    "would",
    "tool",
    "count",
    "steps",
    "shadow",
    "phase",
    "request_id",
}


def interventions(logs: list[dict]) -> list[dict]:
    return [e for e in logs if e["event"] == "loop_intervention"]


@pytest.mark.parametrize("stream", [False, True])
def test_warn_reject_terminate_are_one_event_each(tmp_path, stream):
    with guarded(stubborn(), tmp_path) as gw, capture_logs() as logs:
        Agent(gw.client, tools={"read_file": lambda a: "same"}, stream=stream).run("summarize a.txt")
    events = interventions(logs)
    assert [(e["action"], e["phase"], e["count"]) for e in events] == [
        ("warn", "request", 3),
        ("reject", "response", 4),
        ("terminate", "response", 5),
    ]
    for event in events:
        assert set(event) >= FIELDS, FIELDS - set(event)
        assert (event["detector"], event["tool"], event["policy"], event["run"]) == (
            "no_progress",
            "read_file",
            "test-ladder",
            1,
        )
        assert event["shadow"] is False and event["would"] == event["action"]
        assert event["time"].endswith("Z") and event["session"]
    assert events[-1]["steps"] == [1, 2, 3, 4, 5]
    assert len({e["session"] for e in events}) == 1


def test_shadow_mode_events_say_what_would_have_happened(tmp_path):
    with guarded(stubborn(), tmp_path, ladder_policy("mode: shadow\n")) as gw, capture_logs() as logs:
        Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go", max_steps=6)
    events = interventions(logs)
    assert events and all(e["shadow"] and e["action"] == "pass" for e in events)
    assert {e["would"] for e in events} == {"warn", "reject", "terminate"}


def test_capped_ladder_events_show_the_warn_applied_and_the_action_held_back(tmp_path):
    with guarded(stubborn(), tmp_path, ladder_policy("max_action: warn\n")) as gw, capture_logs() as logs:
        Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go", max_steps=5)
    request = [e for e in interventions(logs) if e["phase"] == "request"]
    assert [(e["action"], e["would"], e["shadow"]) for e in request] == [
        ("warn", "warn", False),
        ("warn", "reject", True),
    ]
    # A proposal the cap let through was not touched: the response path did nothing.
    response = [e for e in interventions(logs) if e["phase"] == "response"]
    assert response and all(e["action"] == "pass" and e["shadow"] for e in response)


def test_agent_label_from_the_matching_agents_entry(tmp_path):
    policy = ladder_policy("""
        agents:
          - id: nightly-bot
            match: {header: nightly}
            max_action: warn
        """)
    with guarded(stubborn(), tmp_path, policy) as gw, capture_logs() as logs:
        Agent(gw.client, tools={"read_file": lambda a: "same"}, headers={"x-loopguard-agent": "nightly"}).run(
            "go", max_steps=4
        )
    assert {e["agent"] for e in interventions(logs)} == {"nightly-bot"}


def test_run_counts_genuine_user_prompts(tmp_path):
    with guarded(stubborn(), tmp_path) as gw, capture_logs() as logs:
        agent = Agent(gw.client, tools={"read_file": lambda a: "same"})
        agent.run("first task", max_steps=2)
        agent.run("second task")
    assert {e["run"] for e in interventions(logs)} == {2}


def test_no_finding_no_event():
    judgement = Judgement(Action.PASS, Action.PASS, None)
    assert intervention(judgement, phase="request", session="s", policy="p") is None


def test_event_serializes_to_json_ready_dict():
    finding = Finding("cycle", 6, (1, 2, 3), ("edit", "test"), "A-B cycle")
    event = intervention(
        Judgement(Action.WARN, Action.WARN, finding), phase="request", session="s", policy="p", run=2, request_id="r1"
    )
    data = event.to_dict()
    assert data["event"] == "loop_intervention" and data["steps"] == [1, 2, 3]
    assert data["tool"] == "edit,test" and data["description"] == "A-B cycle"


def test_event_time_is_utc_iso_8601_with_milliseconds():
    import re
    from datetime import datetime, timedelta, timezone

    from gateway.audit.events import now_iso

    stamp = now_iso()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert abs(datetime.now(UTC) - parsed) < timedelta(minutes=1)
