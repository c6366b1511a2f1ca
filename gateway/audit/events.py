"""The audit event: one finding acted on (or held back by shadow mode / max_action)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, ClassVar

from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.trace.model import Trace
from gateway.trace.pairing import is_genuine_user

EVENT = "loop_intervention"
SAVINGS_EVENT = "loop_savings"


@dataclass(frozen=True, slots=True)
class StoppedWork:
    """What a reject / terminate kept from happening, for the savings estimate: the model and
    the history its next round would have sent. Never written by a sink (it holds content)."""

    model: str
    messages: list[Any]
    protocol: str | None = None  # the adapter that reads ``messages``; None: OpenAI chat


@dataclass(frozen=True, slots=True)
class EventContext:
    """What the operator console shows of an intervention beyond the event itself: the run as
    the detectors saw it, the finding, the policy that worded the text sent, the protocol and
    the model. Never written by a sink as it is (it holds content); the console keeps masked,
    capped excerpts of it, off the request path."""

    protocol: str | None
    model: str | None
    trace: Any  # gateway.trace.model.Trace
    finding: Any  # gateway.detectors.base.Finding
    policy: Any = None  # gateway.policy.engine.EffectivePolicy, for the text sent


_UNWRITTEN = frozenset({"work", "context"})


@dataclass(frozen=True, slots=True)
class InterventionEvent:
    time: str  # ISO 8601, UTC, millisecond precision
    session: str
    run: int  # which run of the session: the number of genuine user prompts so far
    agent: str | None  # the policy's agents entry that applied; None for the global block
    policy: str
    detector: str
    action: str  # what was done to traffic: pass | warn | reject | terminate
    would: str  # what the ladder alone says (uncapped); differs from action when held back
    tool: str  # the finding's tools, comma-joined
    count: int
    steps: tuple[int, ...]
    shadow: bool  # True when would > action (shadow mode or the max_action cap)
    phase: str  # "request" (executed history) or "response" (a proposed call)
    request_id: str | None = None
    description: str = ""
    work: StoppedWork | None = field(default=None, repr=False, compare=False)  # for the savings sink only
    terminate: str | None = None  # how a terminate ended the run: answer | reply | error
    context: EventContext | None = field(default=None, repr=False, compare=False)  # for the console only

    name: ClassVar[str] = EVENT

    def fields(self) -> dict[str, Any]:
        """Everything but the event name, the stopped work and the context, JSON-ready (steps as a list)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _UNWRITTEN}
        out["steps"] = list(self.steps)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"event": EVENT, **self.fields()}


def intervention(
    judgement: Judgement,
    *,
    phase: str,
    session: str,
    policy: str,
    action: Action | None = None,
    agent: str | None = None,
    run: int = 0,
    request_id: str | None = None,
    work: StoppedWork | None = None,
    terminate: str | None = None,
    context: EventContext | None = None,
) -> InterventionEvent | None:
    """The event for a judgement; None when it has no finding (nothing to audit)."""
    finding = judgement.finding
    if finding is None:
        return None
    applied = judgement.action if action is None else action
    if phase == "response" and applied < Action.REJECT:
        # The response path can only veto or end a run; a capped or shadowed refusal let the
        # call through untouched, so nothing was done to traffic here.
        applied = Action.PASS
    would = judgement.would
    return InterventionEvent(
        time=now_iso(),
        session=session,
        run=run,
        agent=agent,
        policy=policy,
        detector=finding.detector,
        action=applied.label,
        would=would.label,
        tool=",".join(finding.tools),
        count=finding.count,
        steps=tuple(finding.steps),
        shadow=judgement.shadow or applied < would,
        phase=phase,
        request_id=request_id,
        description=finding.description,
        work=work if applied >= Action.REJECT else None,
        terminate=terminate if applied == Action.TERMINATE else None,
        context=context,
    )


@dataclass(frozen=True, slots=True)
class SavingsEvent:
    """Follows each ``loop_intervention`` that stopped work (reject, terminate), with the same
    request id: the tokens and dollars one more looping round would have cost. Estimated off the
    request path, so it arrives shortly after its intervention."""

    time: str
    session: str
    request_id: str | None
    detector: str
    action: str  # reject | terminate
    phase: str
    model: str
    tokens: int
    cost_usd: float | None  # None: the model is not in litellm's price table, or litellm is absent
    estimated: bool  # tokens counted as characters / 4 (the price table was not loaded yet)

    name: ClassVar[str] = SAVINGS_EVENT

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_dict(self) -> dict[str, Any]:
        return {"event": SAVINGS_EVENT, **self.fields()}


TOOL_DOWN, TOOL_RECOVERED = "tool_down", "tool_recovered"


@dataclass(frozen=True, slots=True)
class ToolHealthEvent:
    """A remote tool went down for a tenant (failing alike in many of its sessions), or came
    back (``reason``: a success anywhere in the tenant, or silence for the window). Written
    once for the whole fleet: the one replica whose observation made the change writes it."""

    kind: str  # tool_down | tool_recovered
    time: str
    tenant: str  # the client namespace (a hash, never a key)
    tool: str
    endpoint: str  # the MCP server or host the calls named; "" when none
    sessions: int  # sessions that saw it fail within the window
    calls: int  # failing calls since first seen
    first_seen: str
    last_seen: str
    error: str  # one failure's text, volatile parts scrubbed, bounded
    reason: str  # sessions (went down) | success | silence (came back)

    @property
    def name(self) -> str:
        return self.kind

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "kind"}

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.kind, **self.fields()}


# What the audit bus carries: interventions, the savings that follow the ones that stopped work,
# and remote tools' health across sessions (gateway/fleet).
AuditEvent = InterventionEvent | SavingsEvent | ToolHealthEvent


def run_number(trace: Trace | None) -> int:
    """Counted only when an event is emitted (rare), so the request path never pays for it."""
    if trace is None:
        return 0
    return sum(1 for turn in trace.turns if is_genuine_user(turn))


def now_iso() -> str:
    """UTC, millisecond precision, ``Z`` suffix: 2026-05-14T09:12:03.120Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
