"""How a run ends inside the proxy (``interventions.terminate.mode``):

- ``answer``: the model writes the final reply with tools closed and the loop's note in front.
  On the request path the request itself becomes that call (LiteLLM prices and logs it as the
  call it is); on the response path it is one more call through the proxy's router, billed to
  the same key. An answer that calls a tool anyway or has no text is replaced by the template.
- ``reply``: the policy's template, as the model's answer (``finish_reason: "stop"``).
- ``error``: LiteLLM's guardrail error with the policy's status.
"""

from __future__ import annotations

from typing import Any

from gateway.guard.decision import ANSWER, ERROR, REPLY
from gateway.integrations.litellm.turn import Turn
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement


def at_request(turn: Turn, judgement: Judgement) -> dict[str, Any]:
    """The request's data for the run's end: the final-answer call, or LiteLLM's mock of the
    template. Raises the guardrail error in mode ``error``."""
    data = turn.data
    if turn.ending == ERROR:
        turn.end_with_error(judgement, "request")
    if turn.ending == ANSWER:
        turn.answering = judgement  # audited once the answer is in: it may fall back to the template
        answer = turn.answer_payload(judgement)
        for field in [k for k in turn.payload if k not in answer]:
            data.pop(field, None)  # a closed tool_choice or dropped functions
        data.update(answer)
        return data
    turn.record(judgement, Action.TERMINATE, "request", REPLY)
    data["mock_response"] = turn.termination_text(judgement)  # LiteLLM answers it as the model would
    return data


def checked(turn: Turn, judgement: Judgement, response: Any) -> Any:
    """The answer the request path asked for: relayed when it is text, else the template."""
    phase = "request"
    if _is_answer(turn, response):
        turn.record(judgement, Action.TERMINATE, phase, ANSWER)
        return None
    turn.record(judgement, Action.TERMINATE, phase, REPLY)
    return turn.termination_reply(judgement)


async def unary(turn: Turn, judgement: Judgement) -> Any:
    """The run ends on the response path (the headers are not out): its final reply."""
    if turn.ending == ERROR:
        turn.end_with_error(judgement, "response")
    if turn.ending == ANSWER:
        answer = await turn.final_answer(judgement, stream=False)
        if answer is not None and _is_answer(turn, answer):
            turn.record(judgement, Action.TERMINATE, "response", ANSWER)
            return answer
    turn.record(judgement, Action.TERMINATE, "response", REPLY)
    return turn.termination_reply(judgement)


def _is_answer(turn: Turn, response: Any) -> bool:
    try:
        reply = turn.wire.reply(response)
        said = turn.adapter.replies.answer(reply) if reply is not None else None
        if said is None or said.calls or any(turn.adapter.replies.proposed_calls(reply)):
            return False
    except Exception:
        return False
    return bool(said.text.strip())
