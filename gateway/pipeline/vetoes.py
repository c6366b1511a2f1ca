"""A refused call: shown to the model with the gateway's observation, remembered for the
session's later requests, and re-asked while the policy's budget allows."""

from __future__ import annotations

import time
from typing import Any

from gateway.guard import decision
from gateway.guard import store as memory
from gateway.guard.plan import retraced, showing, veto_record
from gateway.guard.response import Refusal
from gateway.pipeline.exchange import Exchange
from gateway.policy.actions import Action
from gateway.upstream.base import UpstreamRequest, UpstreamResponse


async def veto(ex: Exchange, refusal: Refusal) -> str:
    """Record and remember the refused call; the model sees it with our observation from now
    on. Returns the observation."""
    plan = ex.plan
    assert plan is not None
    observation = decision.observation(plan.policy, refusal.judgement)
    ex.verdict.record(ex, refusal.judgement, Action.REJECT, "response")
    exchange = ex.adapter.edits.veto_exchange(refusal.call, observation)
    record = veto_record(plan, exchange, ex.adapter.declared.id_fields)
    await memory.add_veto(ex.gateway.store, plan.session, record, ex.log)
    show(ex, exchange, traced=True)
    return observation


def show(ex: Exchange, entries: list[Any], *, traced: bool = False) -> None:
    """Append ``entries`` to what the model sees on the next re-ask; ``traced``: its proposals
    are judged against them too (a vetoed exchange). The one place a stage sets a new plan on
    the exchange after the request stage; the guard builds it (``gateway.guard.plan``)."""
    assert ex.plan is not None
    plan = showing(ex.plan, entries)
    if traced:
        plan = retraced(plan, ex.adapter.requests.conversation(ex.payload, plan.messages))
    ex.plan = plan


async def reask(ex: Exchange, *, counted: bool = True) -> UpstreamResponse:
    """Ask the model again with what it must now see (streamed like the request was).
    ``counted=False``: a required-tool retry, which has its own budget (max_retries)."""
    if counted:
        ex.reasks += 1
    ex.resent += 1
    out = ex.outgoing
    request = UpstreamRequest("POST", out.path, out.query, out.headers, ex.sent_body())
    started = time.perf_counter()
    try:
        return await ex.upstream.send(request)
    finally:
        ex.clock.waited(started)
