"""One request's plan, and the only ways to change it: each returns a new plan.

The guard builds a :class:`RequestPlan` (``gateway.guard.planner.plan_request``) and owns it:
the plan is frozen, and every later change (the history's warning or replaced result, a vetoed
exchange or a corrective message shown on a re-ask, what the proxy actually sent) is one of the
functions below, which return a new plan and leave the old one as it was. The code that runs
the request (``gateway.pipeline``, the LiteLLM guardrail) keeps the current plan and sets the
new one in its place; nothing assigns a plan's fields. The item lists a plan holds are never
edited in place either: every edit builds a new list (adapters copy what they change).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gateway.guard import prefix
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, Judgement
from gateway.state.base import VetoRecord
from gateway.state.bounds import VETO_TEXT_CHARS, bounded
from gateway.trace.builder import build_trace
from gateway.trace.model import Conversation, Trace, Turn, WarnedCall


@dataclass(frozen=True, slots=True)
class RequestPlan:
    policy: EffectivePolicy
    session: str
    payload: dict[str, Any]
    client_messages: list[Any]  # the items the client sent (after any ``history`` the adapter supplied)
    messages: list[Any]  # the items the model will see: vetoed exchanges re-shown, anchors added
    conversation: Conversation
    trace: Trace
    judgement: Judgement
    client_turns: tuple[Turn, ...] = ()
    changed: bool = False  # ``messages`` differ from what the client sent
    client_hash: str | None = None  # prefix hash of all client messages (where vetoes anchor)
    agent: str = ""  # the run's agent across sessions (gateway/fleet): where a stopped loop is remembered

    @property
    def action(self) -> Action:
        return self.judgement.action


def warning_given(plan: RequestPlan) -> WarnedCall | None:
    """The call whose pattern a warning in this request names, when it is not remembered yet:
    a pattern that goes on after it escalates (in this request's proposals and later requests)."""
    judgement = plan.judgement
    finding = judgement.finding
    if finding is None or judgement.action not in (Action.WARN, Action.REJECT):
        return None
    event = next((e for e in reversed(plan.trace.events) if e.step in finding.steps), plan.trace.latest)
    if event is None or any(w.call_id == event.call_id for w in plan.trace.warned):
        return None
    return WarnedCall(event.call_id, finding.detector)


def with_warned(plan: RequestPlan, warned: WarnedCall) -> RequestPlan:
    """The plan whose trace knows ``warned`` was warned about (its proposals judge on that)."""
    return replace(plan, trace=replace(plan.trace, warned=(*plan.trace.warned, warned)))


def showing(plan: RequestPlan, entries: Sequence[Any]) -> RequestPlan:
    """``entries`` appended to what the model sees on the next re-ask (a vetoed exchange, a
    corrective message)."""
    return replace(plan, messages=[*plan.messages, *entries])


def retraced(plan: RequestPlan, conv: Conversation) -> RequestPlan:
    """The plan whose trace is ``conv``'s (its messages read by the adapter after an edit): a
    vetoed exchange shown is part of the history its next proposals are judged against."""
    return replace(plan, trace=retrace(plan, conv))


def as_sent(plan: RequestPlan, messages: list[Any]) -> RequestPlan:
    """The plan of a request already on its way with ``messages`` (the proxy sent them before
    the guard could edit them): a re-ask continues from what the model was actually sent."""
    return replace(plan, messages=messages)


def retrace(plan: RequestPlan, conv: Conversation) -> Trace:
    """The trace of ``conv`` (the plan's conversation after an edit, e.g. a vetoed exchange
    shown), keeping what the request path learnt from the session's state."""
    trace = build_trace(conv, plan.policy.trace_settings)
    return replace(
        trace,
        compacted_at=plan.trace.compacted_at,
        warned=plan.trace.warned,
        verdict=plan.trace.verdict,
        fleet=plan.trace.fleet,
    )


def veto_record(plan: RequestPlan, exchange: list[Any], ids: frozenset[str] = frozenset({"id"})) -> VetoRecord:
    """Remember a refused call's ``exchange`` (``Edits.veto_exchange``) so later requests of
    the conversation show it to the model, right after the client items of this request.
    ``ids``: the adapter's id fields (``Declaration.id_fields``)."""
    anchor = plan.client_messages
    digest = plan.client_hash
    if digest is None:
        digest = prefix.prefix_hashes_at(plan.client_turns, len(anchor), (len(anchor),))[len(anchor)]
    # Stored bounded in bytes (``state.bounds``): this request showed the exchange whole.
    return VetoRecord(len(anchor), digest, tuple(bounded(exchange, VETO_TEXT_CHARS)), ids)
