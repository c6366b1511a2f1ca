"""Per-agent overrides: matched by header, API-key hash, model glob, path; first match wins;
deep-merged over the global block field by field."""

from __future__ import annotations

import hashlib

import pytest

from gateway.policy import Action

KEY = hashlib.sha256(b"sk-test-123").hexdigest()

AGENTS = f"""\
detectors:
  repeat: {{warn_at: 3, reject_at: 4, terminate_at: 5, window: 6}}
interventions:
  terminate: {{mode: error, status: 422}}
exempt_tools: [check_background_tasks]
agents:
  - id: by-header
    match: {{header: safe-runner}}
    detectors:
      repeat: {{terminate_at: 9}}
  - id: by-key
    match: {{api_key_sha256: "{KEY.upper()}"}}
    mode: shadow
  - id: by-model
    match: {{model: "gpt-4o*"}}
    max_action: warn
    interventions:
      terminate: {{status: 400}}
  - id: by-path
    match: {{path: "/team-a/*"}}
    exempt_tools: [poll]
    detectors: {{poll: false}}
  - id: both
    match: {{header: both, model: "llama-*"}}
    scope: conversation
  - id: shadowed
    match: {{header: safe-runner}}
    mode: shadow
"""


@pytest.fixture
def policy(compile_policy):
    return compile_policy(AGENTS)


@pytest.mark.parametrize(
    ("request_", "label"),
    [
        ({"agent": "safe-runner"}, "by-header"),
        ({"api_key_sha256": KEY}, "by-key"),  # stored upper-case, compared case-insensitively
        ({"model": "gpt-4o-mini"}, "by-model"),
        ({"model": "gpt-4o"}, "by-model"),
        ({"model": "gpt-4"}, None),
        ({"path": "/team-a/v1/chat/completions"}, "by-path"),
        ({"path": "/v1/chat/completions"}, None),
        ({"agent": "both", "model": "llama-3-70b"}, "both"),
        ({"agent": "both"}, None),  # every criterion of an entry must match
        ({"model": "llama-3-70b"}, None),
        ({"agent": "safe-runner", "model": "gpt-4o"}, "by-header"),  # first match wins
        ({}, None),
    ],
)
def test_matching(policy, request_, label):
    assert policy.resolve(**request_).agent == label


def test_first_match_wins_even_if_a_later_entry_matches_too(policy):
    eff = policy.resolve(agent="safe-runner")
    assert eff.agent == "by-header" and eff.mode == "enforce"


def test_nested_detector_field_override_keeps_siblings(policy):
    s = policy.resolve(agent="safe-runner").detectors["repeat"]
    assert (s.warn_at, s.reject_at, s.terminate_at, s.window) == (3, 4, 9, 6)


def test_nested_intervention_override_keeps_siblings(policy):
    terminate = policy.resolve(model="gpt-4o").interventions.terminate
    assert (terminate.mode, terminate.status) == ("error", 400)
    assert policy.resolve().interventions.terminate.status == 422


def test_scalar_overrides(policy):
    assert policy.resolve(api_key_sha256=KEY).mode == "shadow"
    assert policy.resolve(model="gpt-4o").max_action is Action.WARN
    assert policy.resolve(agent="both", model="llama-3").trace_settings.scope == "conversation"


def test_lists_replace_and_switches_merge(policy):
    eff = policy.resolve(path="/team-a/x")
    assert eff.exempt_tools == frozenset({"poll"})  # replaced, not appended: documented
    assert "poll" not in eff.detectors
    assert eff.detector_settings["poll"].enabled is False
    assert eff.detector_settings["poll"].poll_warn_at == 2  # the switch kept its other fields


def test_untouched_parts_are_shared_with_the_global_block(policy):
    default, agent = policy.resolve(), policy.resolve(model="gpt-4o")
    assert agent.trace_settings is default.trace_settings  # one cache key for the trace builder
    assert agent.messages is default.messages
    assert agent.detectors["repeat"] is default.detectors["repeat"]
    own_scope = policy.resolve(agent="both", model="llama-3")
    assert own_scope.trace_settings is not default.trace_settings


def test_agent_entry_unlabelled_gets_its_position(compile_policy):
    policy = compile_policy("agents:\n  - match: {header: x}\n    mode: shadow\n")
    assert policy.resolve(agent="x").agent == "agents[0]"


def test_agent_messages_override(compile_policy):
    policy = compile_policy("agents:\n  - match: {header: cn}\n    messages: {language: zh}\n")
    assert policy.resolve(agent="cn").messages.language == "zh"
    assert policy.resolve().messages.language == "en"
