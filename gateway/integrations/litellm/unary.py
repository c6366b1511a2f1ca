"""post_call for a non-streamed answer, settled by the guard's loop (``gateway.guard.settle``),
as the gateway's pipeline settles its own: every alternative answer (chat ``n > 1``) judged on
its own; a refused first call vetoed and the model re-asked through the proxy's router (up to
``interventions.reject.max_reasks``); a refused later call dropped with the rest of its round; a
terminate-level refusal or an insisting model ends the run with the model's own answer (tools
closed), the template, or the error (``ending``). This module only reads and writes LiteLLM's
objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.guard.decision import Judged, Move, judge_round
from gateway.guard.response import Refusal
from gateway.guard.settle import settle
from gateway.integrations.litellm import ending
from gateway.integrations.litellm.turn import Turn
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy


async def respond(turn: Turn, response: Any) -> Any:
    """The answer for the client: None (``response`` unchanged), a re-ask's, or the end."""
    if turn.answering is not None:  # the request path asked for the run's final answer
        return ending.checked(turn, turn.answering, response)
    settled = await settle(_Front(turn), response)
    if settled.decision.move == Move.TERMINATE:
        assert settled.decision.judgement is not None
        return await ending.unary(turn, settled.decision.judgement)
    return settled.reply if settled.reply is not response else None


class _Front:
    """The guardrail's side of the settling loop: LiteLLM's response objects."""

    __slots__ = ("turn",)

    def __init__(self, turn: Turn) -> None:
        self.turn = turn

    @property
    def policy(self) -> EffectivePolicy | None:
        return self.turn.plan.policy

    @property
    def reasks(self) -> int:
        return self.turn.reasks

    def judged(self, reply: Any) -> Judged | None:
        return _judged(self.turn, self.turn.wire.reply(reply))

    async def veto(self, refusal: Refusal) -> None:
        await self.turn.veto(refusal)

    def dropped(self, others: Sequence[Refusal]) -> None:
        for other in others:
            self.turn.record(other.judgement, Action.REJECT, "response")  # left out of its answer

    def keep_calls(self, reply: Any, keep: tuple[int, ...]) -> Any:
        return self.turn.wire.response(self.turn.adapter.replies.keep_calls(self.turn.wire.reply(reply), keep))

    async def reask(self) -> Any:
        return await self.turn.reask(stream=False)


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
