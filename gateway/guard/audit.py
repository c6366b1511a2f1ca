"""One audit event per finding acted on (or that would have been, in shadow/capped mode)."""

from __future__ import annotations

from typing import Any

from gateway.audit.bus import AuditBus
from gateway.audit.events import EventContext, InterventionEvent, StoppedWork, intervention, run_number
from gateway.audit.log_sink import LogSink
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, Judgement
from gateway.trace.model import Trace


def audit(
    log: Any,
    judgement: Judgement,
    *,
    phase: str,
    session: str,
    policy: str,
    action: Action | None = None,
    bus: AuditBus | None = None,
    agent: str | None = None,
    trace: Trace | None = None,
    request_id: str | None = None,
    work: StoppedWork | None = None,
    terminate: str | None = None,
    effective: EffectivePolicy | None = None,
    protocol: str | None = None,
) -> InterventionEvent | None:
    """Emit the ``loop_intervention`` event to ``bus`` (its log sink writes the structlog line);
    without a bus, to ``log`` alone, as before the bus existed. ``effective`` (the policy that
    applied) and ``protocol`` go with the trace into the event's context, for the console."""
    context = None
    if bus is not None and judgement.finding is not None:
        context = EventContext(protocol, work.model if work is not None else None, trace, judgement.finding, effective)
    event = intervention(
        judgement,
        phase=phase,
        session=session,
        policy=policy,
        action=action,
        agent=agent,
        run=run_number(trace),
        request_id=request_id,
        work=work,
        terminate=terminate,
        context=context,
    )
    if event is None:
        return None
    (bus or AuditBus([LogSink(log)])).emit(event)
    return event
