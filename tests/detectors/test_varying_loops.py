"""Loops that vary (failures written as text, failures on one target with varying arguments,
volatile values in arguments and results, reworded requests to a sub-agent) under the shipped
default policy, each beside the healthy runs shaped like it, which must stay completely quiet."""

from __future__ import annotations

import pytest
from runs import first, judged, strongest
from support.varying import (
    HEALTHY,
    LOOPS,
    claude_code_edit_not_found,
    click_missing_element,
    codex_cat,
    npm_flags,
    openhands_edit_refused,
    reworded_web_agent,
    reworded_with_plans,
    swe_agent_syntax_errors,
    url_with_varying_headers,
)

from gateway.policy.actions import Action


@pytest.mark.parametrize(("script", "detector"), LOOPS.values(), ids=LOOPS.keys())
def test_each_varying_loop_is_warned_by_its_third_attempt(script, detector):
    reached = first(script(), "warn")
    assert reached is not None
    assert reached[0] <= 6  # the third attempt, counting one call between each at most
    if detector is not None:
        assert reached[1] == detector


@pytest.mark.parametrize("script", HEALTHY.values(), ids=HEALTHY.keys())
def test_healthy_look_alikes_stay_quiet(script):
    assert [j for j in judged(script()) if j[1] != "pass"] == []


# --- how far each loop escalates --------------------------------------------------------------

FULL_EVIDENCE = [name for name, (_, detector) in LOOPS.items() if detector == "no_progress"]


@pytest.mark.parametrize("name", FULL_EVIDENCE)
def test_volatile_values_do_not_hide_the_same_call_returning_the_same(name):
    script = LOOPS[name][0]()
    assert first(script, "reject") == (5, "no_progress")
    assert first(script, "terminate") == (8, "no_progress")


def test_codex_cat_is_ended_within_eight_calls_and_vetoed_before_the_fifth_runs():
    phases = judged(codex_cat())
    assert phases[8] == ("response", "reject", "no_progress")  # the 5th call, as proposed
    assert first(codex_cat(), "terminate") == (8, "no_progress")


@pytest.mark.parametrize(
    "script",
    [openhands_edit_refused, swe_agent_syntax_errors, url_with_varying_headers, npm_flags, click_missing_element],
)
def test_failing_again_and_again_on_one_target_escalates(script):
    assert first(script(), "warn") == (3, "target_failure")
    assert first(script(), "reject") == (6, "target_failure")
    assert first(script(), "terminate") == (9, "target_failure")


@pytest.mark.parametrize("script", [lambda: openhands_edit_refused(True), claude_code_edit_not_found])
def test_failures_on_one_target_between_reads_warn_only(script):
    assert first(script(), "warn")[1] == "target_failure"
    assert strongest(script()) == Action.WARN


@pytest.mark.parametrize("script", [reworded_web_agent, reworded_with_plans])
def test_reworded_requests_with_the_same_action_line_are_warned_never_more(script):
    assert first(script(), "warn")[1] == "stagnation"
    assert strongest(script()) == Action.WARN


def test_the_same_rewordings_answered_by_different_actions_stay_quiet():
    script = reworded_web_agent()
    pages = ["Pricing", "About us", "Careers", "Press", "Blog", "Status"]
    varied = [
        script[0],
        *[
            (tool, args, f"I opened the {page} page from the main menu.\n" + result.split("\n", 1)[1])
            for page, (tool, args, result) in zip(pages, script[1:])
        ],
    ]
    assert strongest(varied) == Action.PASS


def test_a_short_action_line_says_nothing():
    assert strongest(reworded_web_agent(action="Done.")) == Action.PASS
