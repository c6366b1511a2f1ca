"""One audit event per finding acted on (or that would have been, in shadow/capped mode)."""

from __future__ import annotations

from gateway.audit.bus import AuditBus
from gateway.audit.events import InterventionEvent, StoppedWork, intervention, run_number
from gateway.audit.log_sink import LogSink
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.trace.model import Trace


def audit(log, judgement: Judgement, *, phase: str, session: str, policy: str, action: Action | None = None,
          bus: AuditBus | None = None, agent: str | None = None, trace: Trace | None = None,
          request_id: str | None = None, work: StoppedWork | None = None,
          terminate: str | None = None) -> InterventionEvent | None:
    """Emit the ``loop_intervention`` event to ``bus`` (its log sink writes the structlog line);
    without a bus, to ``log`` alone, as before the bus existed."""
    event = intervention(judgement, phase=phase, session=session, policy=policy, action=action,
                         agent=agent, run=run_number(trace), request_id=request_id, work=work,
                         terminate=terminate)
    if event is None:
        return None
    (bus or AuditBus([LogSink(log)])).emit(event)
    return event
