"""After the reply: the objects it created are claimed for the tenant, and protocols whose upstream
keeps conversations (``Adapter.history`` set) store what their later requests' ``history``
rebuilds. Never fails the exchange."""

from __future__ import annotations

from gateway.pipeline.exchange import Exchange
from gateway.pipeline.tenancy import claim_created
from gateway.policy.actions import Action


async def remember(ex: Exchange) -> None:
    if ex.reply is None:
        return
    if ex.adapter.history is None:  # no conversation kept; a stored reply is the tenant's all the same
        try:
            await claim_created(ex, ex.reply)
        except Exception as exc:
            ex.log.warning("state_unavailable", op="claim", error=type(exc).__name__)
        return
    sent = ex.sent_payload() if ex.plan is not None else ex.payload
    # The upstream holds exactly what the client saw of this exchange: the guard changed
    # nothing on either side and asked nothing more.
    untouched = ex.plan is not None and not ex.plan.changed and ex.verdict.action == Action.PASS and ex.resent == 0
    try:
        await claim_created(ex, ex.reply)  # the tenant's own: a later request may name them
        await ex.adapter.history.remember(
            sent, ex.reply, ex.gateway.store, ex.namespace, client=ex.payload, untouched=untouched
        )
    except Exception as exc:
        ex.log.warning("state_unavailable", op="remember", error=type(exc).__name__)
