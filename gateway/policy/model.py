"""The compiled, immutable policy: one EffectivePolicy per agents entry, merged at load time.

Per request the gateway calls ``Policy.resolve(...)`` (a few string compares and precompiled
glob matches, first matching entry wins) and then ``EffectivePolicy.judge(trace)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.policy.engine import EffectivePolicy

__all__ = ["AgentRule", "EffectivePolicy", "Policy"]


@dataclass(frozen=True, slots=True)
class AgentRule:
    label: str
    header: str | None
    api_key_sha256: str | None  # lower-case hex
    model: re.Pattern[str] | None
    path: re.Pattern[str] | None
    policy: EffectivePolicy

    def matches(self, agent: str | None, key: str | None, model: str | None, path: str) -> bool:
        # A criterion the rule sets must be present and match; unset criteria match anything.
        if self.header is not None and agent != self.header:
            return False
        if self.api_key_sha256 is not None and (key is None or key.lower() != self.api_key_sha256):
            return False
        if self.model is not None and (model is None or self.model.match(model) is None):
            return False
        return self.path is None or self.path.match(path) is not None


@dataclass(frozen=True, slots=True, eq=False)
class Policy:
    name: str
    source: str
    default: EffectivePolicy  # the global block, for requests no agents entry matches
    rules: tuple[AgentRule, ...]  # in file order

    def resolve(
        self, agent: str | None = None, api_key_sha256: str | None = None, model: str | None = None, path: str = ""
    ) -> EffectivePolicy:
        """The policy for one request: the first agents entry that matches, else the global one.

        ``agent`` is the x-loopguard-agent header, ``api_key_sha256`` the hex SHA-256 of the
        client's API key (the key itself never reaches the policy), ``path`` the request path.
        """
        for rule in self.rules:
            if rule.matches(agent, api_key_sha256, model, path):
                return rule.policy
        return self.default
