"""Ops-managed loop policy: YAML -> validated, merged, immutable Policy; findings -> Judgement.

Typical use on the request path::

    policy = holder.current.resolve(agent, api_key_sha256, model, path)
    judgement = policy.judge(trace)          # never raises for a detector's fault (fail-open)
    text = policy.render("warn", judgement.finding)

See docs/policy.md for the file format and the staged rollout.
"""

from gateway.policy.actions import REJECT_MARKER, Action, action_for
from gateway.policy.engine import EngineStats, Judgement, current_stats
from gateway.policy.holder import PolicyHolder
from gateway.policy.loader import (
    load_policy,
    load_policy_text,
    load_shipped_policy,
    shipped_policy_names,
    shipped_policy_path,
)
from gateway.policy.model import EffectivePolicy, Policy
from gateway.policy.schema import PolicyError

__all__ = [
    "REJECT_MARKER",
    "Action",
    "EffectivePolicy",
    "EngineStats",
    "Judgement",
    "Policy",
    "PolicyError",
    "PolicyHolder",
    "action_for",
    "current_stats",
    "load_policy",
    "load_policy_text",
    "load_shipped_policy",
    "shipped_policy_names",
    "shipped_policy_path",
]
