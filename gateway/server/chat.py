"""POST /v1/chat/completions: parse, let the loop guard judge, forward, relay."""

from __future__ import annotations

import json
import time

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.errors import error_body
from gateway.guard.request import plan_request
from gateway.policy.actions import Action
from gateway.protocols.chat import replies
from gateway.server import chat_expect, chat_stream, chat_unary
from gateway.server.body import too_many_items
from gateway.server.context import Gateway, upstream_path
from gateway.server.exchange import Exchange, new_request_id
from gateway.server.passthrough import read_or_refuse, refused, upstream_failed
from gateway.server.responses import RelayStream, openai_error, relay
from gateway.upstream.base import UpstreamRequest
from gateway.upstream.errors import UpstreamError


async def chat_completions(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    started = time.perf_counter()
    body = await read_or_refuse(gateway, request, started)
    if isinstance(body, Response):
        return body
    payload, problem = parse_payload(body)
    if problem is None and (message := too_many_items(payload.get("messages"), gateway.config.limits.max_messages)):
        problem = openai_error(400, message, code="too_many_messages", param="messages")
    if problem is not None:
        return refused(gateway, "POST", request.url.path, problem, started)
    ex = await _prepare(gateway, request, payload, body, started)
    if ex.plan is not None and ex.plan.action == Action.TERMINATE:
        return _terminate(ex)
    ex.took(started)
    sent = time.perf_counter()
    try:
        upstream = await gateway.upstream.send(ex.outgoing)
    except UpstreamError as exc:
        return upstream_failed(gateway, exc, ex.path)
    finally:
        ex.waited(sent)
    if ex.stream and upstream.status == 200:
        chunks = chat_stream.relay(ex, upstream)
        return RelayStream(200, ex.headers(upstream.headers), chunks, upstream.aclose)
    return await chat_unary.respond(ex, upstream)


def parse_payload(body: bytes) -> tuple[dict, None] | tuple[None, Response]:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:  # valid JSON orjson refuses (lone surrogate escapes, 1e400) is still forwarded
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return None, openai_error(400, f"The request body is not valid JSON: {exc}", code="invalid_json")
    if not isinstance(payload, dict):
        return None, openai_error(400, "The request body must be a JSON object.", code="invalid_body")
    return payload, None


async def _prepare(gateway: Gateway, request: Request, payload: dict, body: bytes, started: float) -> Exchange:
    path = request.url.path
    request_id = new_request_id(request.headers)
    outgoing = UpstreamRequest(
        method="POST", path=upstream_path(path), query=request.scope.get("query_string", b""),
        headers=gateway.forward_headers(request.headers.raw, identity=True), body=body,
    )
    ex = Exchange(gateway, request_id, path, payload, body, payload.get("stream") is True, outgoing,
                  None, gateway.log.bind(request_id=request_id, path=path), started)
    try:
        plan = await plan_request(payload, request.headers, path, gateway.policies.current, gateway.store, ex.log,
                                  sessions=gateway.config.sessions, history=gateway.history, size=len(body))
        ex.plan = plan
        gateway.metrics.judged(plan.session, plan.judgement)  # settles the session's last warn, if any
        ex.expectation = chat_expect.guard_for(ex)  # a tool this turn requires (seed 000), or None
        if plan.judgement.finding is not None:
            ex.record(plan.judgement, plan.action, "request")
        if plan.changed and plan.action != Action.TERMINATE:
            outgoing.body = orjson.dumps({**payload, "messages": plan.messages})
    except Exception:  # noqa: BLE001 - fail-open: the guard must never be the outage
        ex.fail_open("request")
        ex.plan, ex.expectation, outgoing.body = None, None, body
    return ex


def _terminate(ex: Exchange) -> Response:
    """The executed history already crossed the terminate threshold: answer without upstream."""
    assert ex.plan is not None
    text = ex.termination_text(ex.plan.judgement)
    headers = ex.headers([])
    ex.took(ex.started)
    ex.log_request(200)
    if ex.terminate_as_error:
        status = ex.plan.policy.interventions.terminate.status
        return relay(status, [(b"content-type", b"application/json"), *headers],
                     orjson.dumps(error_body(text, "loop_detected", code="loop_detected")))
    if ex.stream:
        include_usage = bool((ex.payload.get("stream_options") or {}).get("include_usage")) \
            if isinstance(ex.payload.get("stream_options"), dict) else False
        chunks = replies.termination_stream(text, ex.model, include_usage=include_usage)
        return RelayStream(200, [(b"content-type", b"text/event-stream"), *headers], _iter(chunks))
    body = orjson.dumps(replies.termination_completion(text, ex.model))
    return relay(200, [(b"content-type", b"application/json"), *headers], body)


async def _iter(chunks: list[bytes]):
    for chunk in chunks:
        yield chunk

