"""A refused call: shown to the model with the gateway's observation, remembered for the
session's later requests, and re-asked while the policy's budget allows."""

from __future__ import annotations

import time
from typing import Any

from gateway.guard import decision
from gateway.guard.request import retrace, veto_record
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
    try:
        await ex.gateway.store.add_veto(plan.session, veto_record(plan, exchange, ex.adapter.declared.id_fields))
    except Exception as exc:  # the veto still holds for this request; later ones may not see it
        ex.log.warning("state_unavailable", op="add_veto", error=type(exc).__name__)
    show(ex, exchange)
    plan.trace = retrace(plan, ex.adapter.requests.conversation(ex.payload, plan.messages))
    return observation


def show(ex: Exchange, entries: list[Any]) -> None:
    """Append ``entries`` to what the model sees on the next re-ask."""
    assert ex.plan is not None
    ex.plan.messages = [*ex.plan.messages, *entries]


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
