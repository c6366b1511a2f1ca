"""post_call for a non-streamed answer: judge its proposed calls, veto and re-ask, or end the run.

A refused first call is vetoed and the model asked again (up to ``interventions.reject.max_reasks``)
with its call and the error observation in the history; a refused later call is dropped with the
rest of the round; a terminate-level refusal or an insisting model gets the termination reply.
"""

from __future__ import annotations

from typing import Any

from gateway.guard.response import Refusal
from gateway.integrations.litellm.turn import Turn
from gateway.policy.actions import Action
from gateway.protocols.chat import replies
from gateway.protocols.chat.parse import tool_calls_from_message


async def respond(turn: Turn, response: Any) -> Any:
    """The answer for the client: ``response`` itself (None: unchanged), a re-ask's, or the end."""
    changed = False
    while (refusal := _refusal(turn, response)) is not None:
        if not turn.may_reask(refusal) and refusal.position == 0:
            return _terminate(turn, refusal)
        await turn.veto(refusal)
        changed = True
        if refusal.position > 0:  # the calls before it go to the agent; the rest are dropped
            _keep_first(response, refusal.position)
            break
        response = await turn.reask(stream=False)
    return response if changed else None


def _refusal(turn: Turn, response: Any) -> Refusal | None:
    """The first proposed call the policy refuses; None lets the answer through."""
    try:
        choices = getattr(response, "choices", None)
        if not choices:
            return None
        message = choices[0].message
        calls = tool_calls_from_message(message.model_dump() if hasattr(message, "model_dump") else message)
        if not calls:
            return None
        judge = turn.proposal_judge()
        for position, call in enumerate(calls):
            if not judge.judge(call, position):
                break
    except Exception:  # noqa: BLE001 - fail-open: an odd response goes to the agent untouched
        turn.runtime.metrics.engine.fail_open_errors += 1
        turn.runtime.log.exception("fail_open", where="response", request_id=turn.request_id)
        return None
    for held in judge.shadowed:
        turn.record(held, held.action, "response")
    return judge.refusal


def _keep_first(response: Any, count: int) -> None:
    message = response.choices[0].message
    message.tool_calls = list(message.tool_calls or [])[:count]


def _terminate(turn: Turn, refusal: Refusal) -> Any:
    turn.record(refusal.judgement, Action.TERMINATE, "response")
    text = turn.termination_text(refusal.judgement)
    if turn.terminate_as_error:
        raise turn.termination_error(text)
    from litellm import ModelResponse  # noqa: PLC0415 - the proxy's own response type

    return ModelResponse(**replies.termination_completion(text, turn.model))
