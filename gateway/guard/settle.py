"""What a judged unary reply becomes, acted on until one may go to the client: the loop every
front end runs.

The gateway's pipeline and the LiteLLM guardrail read, send and write replies their own way
(a :class:`Front` each); what a ``Decision`` makes of a reply is the same for both, so it is
written once, here:

- ``PASS``: the reply goes out as it is (the front may still act on it: a turn's required tool);
- ``TERMINATE``: the run ends; the front writes the final reply as the decision says;
- ``DROP``: the refused call is vetoed, the other answers' refusals recorded, and the reply
  keeps the calls before it (the agent runs those);
- ``REASK``: the same veto and records, then the model is asked again and its reply judged in
  turn, while the policy's re-ask budget lasts (``decision.decide``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from gateway.guard.decision import Decision, Judged, Move, decide
from gateway.guard.response import Refusal
from gateway.policy.engine import EffectivePolicy

R = TypeVar("R")


class Front(Protocol[R]):
    """A front end's side of the loop; ``R``: a reply as it reads one."""

    @property
    def policy(self) -> EffectivePolicy | None:
        """The request's policy; None: not judged (every reply passes)."""
        ...

    @property
    def reasks(self) -> int:
        """Re-asks spent on this request so far."""
        ...

    def judged(self, reply: R) -> Judged | None:
        """The reply's proposed calls judged (shadowed refusals audited); None lets it pass."""
        ...

    async def veto(self, refusal: Refusal) -> None:
        """Record the refused call; the model sees it with the observation from now on."""
        ...

    def dropped(self, others: Sequence[Refusal]) -> None:
        """The other answers' refusals: each left out of its answer (audited as ``reject``)."""
        ...

    def keep_calls(self, reply: R, keep: tuple[int, ...]) -> R:
        """The reply with each answer's first ``keep`` calls only."""
        ...

    async def reask(self) -> R:
        """The model asked again with what it must now see (one re-ask counted)."""
        ...


@dataclass(frozen=True, slots=True)
class Settled(Generic[R]):
    """The reply that may go to the client (``PASS``, ``DROP``), or the one the run ends on
    (``TERMINATE``: the front writes the final reply)."""

    reply: R
    decision: Decision


async def settle(front: Front[R], reply: R) -> Settled[R]:
    """Judge ``reply`` and act on the decision, re-asking until a reply may go out or the run ends."""
    while True:
        decision = decide(front.judged(reply), front.policy, front.reasks)
        if decision.move in (Move.PASS, Move.TERMINATE):
            return Settled(reply, decision)
        assert decision.refusal is not None
        await front.veto(decision.refusal)
        front.dropped(decision.others)
        if decision.move == Move.DROP:  # the calls before it go to the agent; the rest are dropped
            return Settled(front.keep_calls(reply, decision.keep), decision)
        reply = await front.reask()
