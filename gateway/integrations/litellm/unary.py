"""post_call for a non-streamed answer, decided by the gateway's decision core
(``gateway.guard.decision``): every alternative answer (chat ``n > 1``) judged on its own; a
refused first call vetoed and the model re-asked (up to ``interventions.reject.max_reasks``); a
refused later call dropped with the rest of its round; a terminate-level refusal or an insisting
model ends the run with the model's own answer (tools closed), the template, or the error."""

from __future__ import annotations

from typing import Any

from gateway.guard.decision import Judged, Move, decide, judge_round
from gateway.integrations.litellm import ending
from gateway.integrations.litellm.turn import Turn
from gateway.policy.actions import Action


async def respond(turn: Turn, response: Any) -> Any:
    """The answer for the client: None (``response`` unchanged), a re-ask's, or the end."""
    if turn.answering is not None:  # the request path asked for the run's final answer
        return ending.checked(turn, turn.answering, response)
    changed = False
    while True:
        reply = turn.wire.reply(response)
        decision = decide(_judged(turn, reply), turn.plan.policy, turn.reasks)
        if decision.move == Move.PASS or reply is None:
            return response if changed else None
        assert decision.refusal is not None and decision.judgement is not None
        if decision.move == Move.TERMINATE:
            return await ending.unary(turn, decision.judgement)
        await turn.veto(decision.refusal)
        for other in decision.others:
            turn.record(other.judgement, Action.REJECT, "response")  # left out of its answer
        if decision.move == Move.DROP:  # the calls before it go to the agent; the rest are dropped
            return turn.wire.response(turn.adapter.replies.keep_calls(reply, decision.keep))
        response = await turn.reask(stream=False)
        changed = True


def _judged(turn: Turn, reply: dict[str, Any] | None) -> Judged | None:
    """None lets the answer through (nothing proposed, or the judge failed open)."""
    if reply is None:
        return None
    try:
        judged = judge_round(turn.plan.policy, turn.plan.trace, turn.adapter.replies.proposed_calls(reply))
    except Exception:
        turn.runtime.metrics.engine.fail_open_errors += 1
        turn.runtime.log.exception("fail_open", where="response", request_id=turn.request_id)
        return None
    for held in judged.shadowed:
        turn.record(held, held.action, "response")
    return judged
