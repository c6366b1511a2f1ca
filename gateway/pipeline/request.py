"""Request stages: parse the client's body, judge the executed history, write what goes upstream.

Fail-open: any error in judging forwards the client's exact bytes, with ``pass`` in the headers.
"""

from __future__ import annotations

from typing import Any

from gateway.guard.expectation import for_plan
from gateway.guard.planner import plan_request
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.published import SESSION
from gateway.pipeline.verdict import fail_open
from gateway.policy.actions import Action
from gateway.protocols.grown import GrownBodies
from gateway.protocols.roles import Adapter
from gateway.state.session import client_namespace
from gateway.wire import codec


def parse(
    adapter: Adapter,
    body: bytes,
    bodies: GrownBodies | None = None,
) -> tuple[dict[str, Any] | None, str | None, str | None, int | None]:
    """(payload, None, None, where its last item ends in ``body`` if known), or (None, message,
    code, None) for a body that is not a JSON object. Valid JSON that orjson refuses (lone
    surrogate escapes, 1e400, deep nesting) is parsed all the same. ``bodies``: what the
    conversation's earlier bodies were, so only what is new is parsed."""
    try:
        payload, end = (codec.loads(body), None) if bodies is None else bodies.read(body, adapter.requests.items_field)
    except codec.DecodeError as exc:
        return None, f"The request body is not valid JSON: {exc}", "invalid_json", None
    if not isinstance(payload, dict):
        return None, "The request body must be a JSON object.", "invalid_body", None
    return payload, None, None, end


async def judge(ex: Exchange, headers: dict[str, str]) -> None:
    """Plan the request: ``ex.plan``, ``ex.expectation`` and the outgoing body; the actions
    taken are recorded only once the edited body exists."""
    gateway, adapter = ex.gateway, ex.adapter
    # Known before anything can fail: ``remember`` stores the reply under it even when the
    # guard failed open.
    ex.namespace = client_namespace(headers)
    try:
        items, judged = adapter.requests.items(ex.payload), ex.payload
        if adapter.history is not None:
            ex.history = await adapter.history.history(ex.payload, gateway.store, ex.namespace)
            items = [*ex.history, *items] if ex.history else items
            # Read as a request sending the whole conversation: fields the upstream keeps
            # (an Anthropic thread's system and tools) back in place.
            judged = adapter.history.restored(ex.payload, ex.namespace)
        plan = await plan_request(
            adapter,
            judged,
            items,
            headers,
            ex.path,
            gateway.policies.current,
            gateway.store,
            ex.log,
            sessions=gateway.config.sessions,
            history=gateway.history,
            size=len(ex.body),
            fleet=gateway.fleet,
        )
        ex.plan = plan
        ex.verdict.profile = plan.policy.profile
        SESSION.set(plan.session)  # for the request's span, whatever the session's source
        ex.expectation = for_plan(plan)  # a tool this turn requires, or None
        if plan.action != Action.TERMINATE and (plan.changed or _chain_rewrites(ex)):
            ex.outgoing.body = ex.sent_body()
        gateway.metrics.judged(plan.session, plan.judgement)  # settles the session's last warn, if any
        _ask_judge(ex)
        if plan.judgement.finding is not None and plan.action != Action.TERMINATE:
            ex.verdict.record(ex, plan.judgement, plan.action, "request")  # a terminate: once its reply is written
    except Exception:
        fail_open(ex, "request")
        ex.plan, ex.expectation, ex.outgoing.body = None, None, ex.body
        ex.verdict.reset()


def _ask_judge(ex: Exchange) -> None:
    """The optional model judge, in the background: asked only when due (detectors.llm_judge).
    Through the gateway's own upstream it needs this request's credentials for that upstream,
    which a protocol served by another provider does not carry."""
    judge, plan = ex.gateway.judge, ex.plan
    if judge is None or plan is None or plan.action == Action.TERMINATE:
        return
    headers = ex.outgoing.headers if ex.upstream is ex.gateway.upstream else []
    judge.consider(
        plan.policy, plan.session, plan.trace, plan.judgement, ex.adapter.requests.model(ex.payload) or None, headers
    )


def _chain_rewrites(ex: Exchange) -> bool:
    """A request continuing a server-side chain may need rewriting though the guard changed
    nothing (Responses: the upstream's own id for a response the client knows by another, or
    outputs owed for calls the gateway withheld): the adapter then answers ``with_items`` with
    a new payload instead of the client's own."""
    refers = bool(ex.history) or bool(
        ex.adapter.history.references(ex.payload) if ex.adapter.history is not None else []
    )
    return refers and ex.sent_payload() is not ex.payload
