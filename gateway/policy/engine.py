"""Findings to one decision: run the enabled detectors, fail open, pick the strongest, cap it.

The plan (which detectors, with which settings and exemptions, in which order) is built once when
a policy loads; judging a request is a loop over it with no parsing and no allocation beyond the
findings themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

# Loggers are fetched per call in this package (rare paths only): a module-level logger would be
# frozen by cache_logger_on_first_use before the CLI or a test configures structlog.
from structlog import get_logger as _log

from gateway.agents.catalog import Catalog
from gateway.detectors.base import Detector, DetectorSettings, Finding
from gateway.detectors.common import same_operation
from gateway.policy.actions import Action, action_for
from gateway.policy.messages import Kind, Messages, summarize_progress
from gateway.policy.schema import Interventions
from gateway.trace.model import Conversation, ToolEvent, Trace
from gateway.trace.settings import TraceSettings

Registry = Mapping[str, Detector[Any]]  # each detector with its own settings class


@dataclass(frozen=True, slots=True)
class Judgement:
    action: Action  # what to apply: capped by max_action, PASS in shadow mode
    would: Action  # uncapped: what the ladder alone says, for audit logs and shadow rollouts
    finding: Finding | None  # the finding that decided ``would``; None when it is PASS
    findings: tuple[Finding, ...] = ()  # every finding, acted on or not
    shadow: bool = False

    @property
    def detector(self) -> str | None:
        return self.finding.detector if self.finding is not None else None


@dataclass
class EngineStats:
    """Fail-open counters one app's metrics endpoint reads; plain ints, bumped under the GIL."""

    fail_open_errors: int = 0
    errors_by_detector: Counter[str] = field(default_factory=Counter)


# Each app counts its own: its request middleware sets its stats for the request's context (two
# apps in one process never report each other's fail-opens). Judgements made outside any app
# (replay, check) count in UNATTRIBUTED.
UNATTRIBUTED = EngineStats()
_CURRENT: ContextVar[EngineStats] = ContextVar("loopguard_engine_stats", default=UNATTRIBUTED)


def current_stats() -> EngineStats:
    return _CURRENT.get()


@contextmanager
def counting_into(stats: EngineStats) -> Iterator[None]:
    """Count the fail-opens of everything run inside the block (and its tasks) into ``stats``."""
    token = _CURRENT.set(stats)
    try:
        yield
    finally:
        _CURRENT.reset(token)


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    detect: Callable[[Trace, DetectorSettings], Finding | None]
    settings: DetectorSettings
    exempt: frozenset[str]  # global exempt_tools plus the detector's own


def default_registry() -> Registry:
    # Imported on use: the detectors package imports heavier libraries (rapidfuzz) that the
    # policy code itself does not need, and tests inject their own registries.
    from gateway.detectors import REGISTRY

    return REGISTRY


def build_plan(
    detectors: Mapping[str, DetectorSettings], exempt_tools: frozenset[str], registry: Registry
) -> tuple[Step, ...]:
    """Enabled detectors in registry order, which is their priority order on ties."""
    return tuple(
        Step(name, det.detect, detectors[name], exempt_tools | detectors[name].exempt_tools)
        for name, det in registry.items()
        if name in detectors and detectors[name].enabled
    )


def blocking(plan: tuple[Step, ...]) -> tuple[Step, ...]:
    """The steps that can reject or terminate. A proposed call is only ever refused, never
    warned (warnings travel on the request path), so the response path runs just these."""
    return tuple(step for step in plan if _can_block(step.settings))


def _can_block(settings: DetectorSettings) -> bool:
    # Any ladder counts: e.g. no_progress's poll_reject_at beside its reject_at.
    return any(value is not None for name, value in settings if name.endswith(("reject_at", "terminate_at")))


def evaluate(plan: tuple[Step, ...], trace: Trace, *, cap: Action, shadow: bool) -> Judgement:
    latest = trace.latest
    if latest is None:
        return _pass(shadow)
    findings: list[Finding] = []
    best, deciding = Action.PASS, None
    for step in plan:
        if latest.tool in step.exempt:
            continue
        try:
            finding = step.detect(trace, step.settings)
            if finding is None:
                continue
            action = action_of(step.settings, finding)
            if action >= Action.REJECT and not aimed_at(finding, trace):
                action = Action.WARN
        except Exception:
            _fail_open(step.name)
            continue
        findings.append(finding)
        if action > best:  # strictly greater: on ties the earlier (higher priority) detector wins
            best, deciding = action, finding
    applied = Action.PASS if shadow else min(best, cap)
    return Judgement(applied, best, deciding, tuple(findings), shadow)


def action_of(settings: DetectorSettings, finding: Finding) -> Action:
    """The ladder a finding is measured against. A detector with several ladders (e.g. polling
    thresholds beside the generic ones) exposes ``thresholds_for(finding)`` returning the object
    that carries the warn_at/reject_at/terminate_at that apply."""
    pick = getattr(settings, "thresholds_for", None)
    ladder = pick(finding) if callable(pick) else settings
    return action_for(ladder, finding.count)


def aimed_at(finding: Finding, trace: Trace) -> bool:
    """Whether a blocking finding may refuse or end at the trace's latest call: a reject or a
    terminate stops the pattern, never the way out of it. The latest call must be one of the
    finding's steps (a call that breaks the pattern, such as a new target, passes; on the request
    path an executed call outside the pattern is at most warned about), and a proposed call that
    does what no call of the pattern did (``same_operation``: a `touch` of the missing file the
    shell kept failing to read, a shell action after reads; a whole-file write after refused
    edits of that file) is a new kind of action, not the next attempt. Nothing is reset: the
    detectors still
    count the pattern, so it is blocked again as soon as it resumes. A finding that names no
    calls (a rule about the turn) is not about a pattern and is left as it is."""
    steps = finding.steps
    latest = trace.latest
    if not steps or latest is None:
        return True
    if latest.step not in steps:
        return False
    if not latest.proposed:
        return True
    others = _events_at(trace, steps, latest)
    return not others or any(same_operation(e, latest) for e in others)


def _events_at(trace: Trace, steps: tuple[int, ...], latest: ToolEvent) -> list[ToolEvent]:
    """The trace's events at ``steps`` other than ``latest``, walking back no further than the
    oldest of them (a pattern sits at the end of the trace: a short walk)."""
    wanted, oldest = set(steps), min(steps)
    found = []
    for event in reversed(trace.events):
        if event.step < oldest:
            break
        if event.step in wanted and event is not latest:
            found.append(event)
    return found


def _fail_open(name: str) -> None:
    stats = _CURRENT.get()
    stats.fail_open_errors += 1
    stats.errors_by_detector[name] += 1
    _log(__name__).exception("policy.detector_failed", detector=name, fail_open=True)


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
    blocking_plan: tuple[Step, ...] | None = field(default=None, repr=False, compare=False)
    # The agent profiles this block knows (gateway/agents) and, on a policy made for one
    # recognised agent, that profile's name ("" for the block itself).
    catalog: Catalog | None = field(default=None, repr=False, compare=False)
    profile: str = ""

    def for_agent(self, conv: Conversation, user_agent: str = "") -> EffectivePolicy:
        """This policy reading traces through the profile of the agent that sent ``conv``;
        itself for a client no profile recognises."""
        catalog = self.catalog
        if catalog is None or self.profile:
            return self
        found = catalog.recognise(conv, user_agent)
        return self if found is None else catalog.policy_for(self, found)

    @property
    def shadow(self) -> bool:
        return self.mode == "shadow"

    def judge(self, trace: Trace) -> Judgement:
        """Run the enabled detectors of the registry the policy was loaded with on ``trace``:
        on its latest call, and on each other call of the latest round as if it were the latest
        (the calls of a round were chosen together: a look at another file issued beside a
        retried failure hides nothing). The strongest judgement wins; on a tie the latest call's."""
        judgement = evaluate(self.plan, trace, cap=self.max_action, shadow=self.shadow)
        for position in trace.round_mates():
            other = evaluate(self.plan, trace.ending_at(position), cap=self.max_action, shadow=self.shadow)
            if other.would > judgement.would:
                judgement = other
        return judgement

    def judge_proposal(self, trace: Trace) -> Judgement:
        """Judge the trace whose latest event is a proposed call: only reject/terminate matter,
        so detectors that can at most warn are skipped (the same refusals, less work)."""
        plan = self.blocking_plan if self.blocking_plan is not None else blocking(self.plan)
        return evaluate(plan, trace, cap=self.max_action, shadow=self.shadow)

    def render(self, kind: Kind, finding: Finding | None, **extra: object) -> str:
        """The intervention text for ``kind`` (warn | reject | reask | terminate); never raises.
        ``extra`` fills or overrides placeholders, e.g. ``progress=policy.progress(trace)``."""
        return self.messages.render(kind, finding, **extra)

    def progress(self, trace: Trace) -> str:
        """A short account of what the run did so far, for the terminate text's ``{progress}``."""
        return summarize_progress(trace, self.messages.language)


_PASS = {flag: Judgement(Action.PASS, Action.PASS, None, (), flag) for flag in (False, True)}


def _pass(shadow: bool) -> Judgement:
    return _PASS[shadow]
