"""The end of a run whose model keeps asking for a vetoed call, as the gateway would reach it.

After a veto the gateway re-asks inside the same request. A vetoed proposal counts as a repeat,
so each re-ask adds one to the count, and the run ends at the detector's terminate threshold or,
when ``max_reasks`` re-asks did not change the model's mind, right after the last one. Replay
cannot see those re-asks, but the recording shows what the model asked for next: when it is the
vetoed call again, the model is taken to insist, and the run ends at the vetoed step.
"""

from __future__ import annotations

import dataclasses

from gateway.detectors.base import Finding
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, action_of
from gateway.replay.model import Mark
from gateway.trace.model import Conversation, ToolCall, Turn
from gateway.trace.normalize import args_info


def insists(eff: EffectivePolicy, conv: Conversation, turn: Turn, call: ToolCall) -> bool:
    """The model's next proposal in the recording is ``call`` again (same tool, same arguments)."""
    later = (t for t in conv.turns if t.index > turn.index and t.role == "assistant" and t.tool_calls)
    following = next(later, None)
    if following is None:
        return False
    again = following.tool_calls[0]
    same = args_info(again.arguments, eff.trace_settings).hash == args_info(call.arguments, eff.trace_settings).hash
    return again.name == call.name and same


def ending(eff: EffectivePolicy, finding: Finding) -> Mark:
    """The terminate the re-asks lead to, from the vetoed proposal's ``finding``."""
    reasks = eff.interventions.reject.max_reasks
    settings = eff.detectors[finding.detector]
    count = finding.count + reasks
    for extra in range(1, reasks + 1):
        if action_of(settings, dataclasses.replace(finding, count=finding.count + extra)) == Action.TERMINATE:
            count = finding.count + extra
            break
    why = (
        f"the model asked for it again right after (as recorded): each re-ask counts, so with "
        f"{reasks} re-ask{'s' if reasks != 1 else ''} the run ends at count {count}"
    )
    return Mark("terminate", finding.detector, "response", count, why)
