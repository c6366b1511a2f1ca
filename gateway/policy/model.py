"""The compiled, immutable policy: one EffectivePolicy per agents entry, merged at load time.

Per request the gateway calls ``Policy.resolve(...)`` (a few string compares and precompiled
glob matches, first matching entry wins) and then ``EffectivePolicy.judge(trace)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.detectors.base import DetectorSettings, Finding
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement, Registry, Step, build_plan, judge
from gateway.policy.messages import Kind, Messages, summarize_progress
from gateway.policy.schema import Interventions
from gateway.trace.model import Trace
from gateway.trace.settings import TraceSettings


# eq=False: identity equality and hashing, so a policy can key a cache (its mappings can't hash)
@dataclass(frozen=True, slots=True, eq=False)
class EffectivePolicy:
    name: str  # the policy's name (file stem unless set)
    source: str  # the file it came from, for logs
    agent: str | None  # label of the agents entry it was merged for; None: the global block
    mode: str  # "enforce" | "shadow"
    max_action: Action
    exempt_tools: frozenset[str]  # global exemptions (each detector adds its own)
    trace_settings: TraceSettings = field(repr=False)  # scope + normalize, for the trace builder
    interventions: Interventions
    messages: Messages
    detector_settings: Mapping[str, DetectorSettings]  # every registered detector, registry order
    detectors: Mapping[str, DetectorSettings]  # the enabled ones
    plan: tuple[Step, ...] = field(repr=False, compare=False)

    @property
    def shadow(self) -> bool:
        return self.mode == "shadow"

    def judge(self, trace: Trace, registry: Registry | None = None) -> Judgement:
        """Run the enabled detectors on ``trace``. ``registry`` replaces the one the policy was
        loaded with (tests inject fakes); detectors it lacks are skipped."""
        plan = self.plan if registry is None else build_plan(self.detectors, self.exempt_tools, registry)
        return judge(plan, trace, cap=self.max_action, shadow=self.shadow)

    def render(self, kind: Kind, finding: Finding | None, **extra: object) -> str:
        """The intervention text for ``kind`` (warn | reject | reask | terminate); never raises.
        ``extra`` fills or overrides placeholders, e.g. ``progress=policy.progress(trace)``."""
        return self.messages.render(kind, finding, **extra)

    def progress(self, trace: Trace) -> str:
        """A short account of what the run did so far, for the terminate text's ``{progress}``."""
        return summarize_progress(trace, self.messages.language)


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

    def resolve(self, agent: str | None = None, api_key_sha256: str | None = None,
                model: str | None = None, path: str = "") -> EffectivePolicy:
        """The policy for one request: the first agents entry that matches, else the global one.

        ``agent`` is the x-loopguard-agent header, ``api_key_sha256`` the hex SHA-256 of the
        client's API key (the key itself never reaches the policy), ``path`` the request path.
        """
        for rule in self.rules:
            if rule.matches(agent, api_key_sha256, model, path):
                return rule.policy
        return self.default
