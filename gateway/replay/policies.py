"""The policy a replayed request is judged with: resolved as the gateway resolves it, enforcing.

A shadow policy shows what it would do when enforced (its ``max_action`` cap still applies). The
agent's profile is recognised from the requests as in production; where a log recorded neither
the tools nor the system prompt that would name the client, the run is read through the profile
of the client that wrote the log (``Run.profile``), unless the policy chose a profile itself.
"""

from __future__ import annotations

import dataclasses

from gateway.agents.catalog import AUTO
from gateway.policy.engine import EffectivePolicy
from gateway.policy.model import Policy
from gateway.replay.run import Run


class Enforced:
    """The policy as replay resolves it: a shadow policy shows what it would do when enforced
    (its max_action cap still applies); ``profile``: the client's, forced on every request."""

    def __init__(self, policy: Policy, profile: str | None = None) -> None:
        self.policy, self.profile = policy, profile

    def resolve(
        self, agent: str | None = None, api_key_sha256: str | None = None, model: str | None = None, path: str = ""
    ) -> EffectivePolicy:
        eff = self.policy.resolve(agent, api_key_sha256, model, path)
        eff = dataclasses.replace(eff, mode="enforce") if eff.shadow else eff
        catalog = eff.catalog
        if self.profile is None or catalog is None or catalog.choice != AUTO:
            return eff
        derived: EffectivePolicy = catalog.policy_for(eff, catalog.by_name[self.profile])
        return derived


def fallback_profile(run: Run, policy: Policy, agent: str | None, model: str | None) -> str | None:
    """The client's profile when its requests do not name it (and the policy knows it)."""
    if run.profile is None:
        return None
    segment = run.segments[0]
    eff = Enforced(policy).resolve(agent=agent, model=model, path=segment.path)
    catalog = eff.catalog
    if catalog is None or catalog.choice != AUTO or run.profile not in catalog.by_name:
        return None
    return run.profile if catalog.recognise(segment.conversation()) is None else None
