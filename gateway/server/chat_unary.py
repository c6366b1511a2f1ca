"""The non-streaming response path: judge the proposed calls, veto, re-ask, or terminate."""

from __future__ import annotations

import time
from typing import Any

import orjson
from starlette.responses import Response

from gateway.errors import error_body
from gateway.guard.response import Refusal
from gateway.policy.actions import Action
from gateway.protocols.chat import replies
from gateway.protocols.chat.parse import tool_calls_from_message
from gateway.server import chat_expect
from gateway.server.exchange import Exchange
from gateway.server.passthrough import upstream_failed
from gateway.server.responses import relay
from gateway.upstream.base import UpstreamResponse
from gateway.upstream.errors import UpstreamError

_TOOL_KEYS = (b'"tool_calls"', b'"function_call"')
_JSON = (b"content-type", b"application/json")


async def respond(ex: Exchange, upstream: UpstreamResponse) -> Response:
    try:
        status, headers, content = await _read(ex, upstream)
        while (found := _refusal(ex, status, content)) is not None:
            data, refusal = found
            if not ex.may_reask(refusal) and refusal.position == 0:
                return _terminate(ex, refusal)
            await ex.veto(refusal)
            if refusal.position > 0:  # the calls before it go to the agent; the rest are dropped
                content = _keep_first(data, refusal.position)
                break
            status, headers, content = await _read(ex, await ex.reask(stream=False))
        if ex.expectation is not None:  # the turn requires a tool: re-ask, then warn (seed 000)
            if (retry := await chat_expect.retry_unary(ex, status, content)) is not None:
                return await respond(ex, retry)
            content = chat_expect.final_unary(ex, status, content)
    except UpstreamError as exc:
        return upstream_failed(ex.gateway, exc, ex.path)
    ex.log_request(status)
    return relay(status, ex.headers(headers), content)


async def _read(ex: Exchange, upstream: UpstreamResponse) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    started = time.perf_counter()
    try:
        return upstream.status, upstream.headers, await upstream.aread()
    finally:
        await upstream.aclose()
        ex.waited(started)


def _refusal(ex: Exchange, status: int, content: bytes) -> tuple[dict[str, Any], Refusal] | None:
    """The first proposed call the policy refuses, with the parsed body; None lets it through."""
    if ex.plan is None or status != 200 or not any(key in content for key in _TOOL_KEYS):
        return None
    started = time.perf_counter()
    try:
        data = orjson.loads(content)
        calls = tool_calls_from_message(data["choices"][0]["message"])
        judge = ex.proposal_judge()
        for position, call in enumerate(calls):
            if not judge.judge(call, position):
                break
    except Exception:  # noqa: BLE001 - fail-open: an odd response goes to the agent untouched
        ex.fail_open("response")
        return None
    finally:
        ex.took(started)
    for held in judge.shadowed:
        ex.record(held, held.action, "response")
    return (data, judge.refusal) if judge.refusal is not None else None


def _keep_first(data: dict[str, Any], count: int) -> bytes:
    message = data["choices"][0]["message"]
    message["tool_calls"] = message["tool_calls"][:count]
    return orjson.dumps(data)


def _terminate(ex: Exchange, refusal: Refusal) -> Response:
    ex.record(refusal.judgement, Action.TERMINATE, "response")
    text = ex.termination_text(refusal.judgement)
    ex.log_request(200)
    if ex.terminate_as_error:
        status = ex.plan.policy.interventions.terminate.status
        body = orjson.dumps(error_body(text, "loop_detected", code="loop_detected"))
        return relay(status, ex.headers([_JSON]), body)
    return relay(200, ex.headers([_JSON]), orjson.dumps(replies.termination_completion(text, ex.model)))

