"""Ending the run: a final text answer in place of the model's, or an error when the policy's
terminate mode says so."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.responses import Response

from gateway.guard.response import Refusal
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.timing import log_request
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.protocols import codec
from gateway.protocols.base import StreamFilter
from gateway.protocols.sse import comment
from gateway.server.responses import RelayStream, relay

LOOP = "loop_detected"
JSON = (b"content-type", b"application/json")
SSE = (b"content-type", b"text/event-stream")


def text(ex: Exchange, judgement: Judgement) -> str:
    assert ex.plan is not None
    progress = ex.plan.policy.progress(ex.plan.trace)
    return ex.plan.policy.render("terminate", judgement.finding, progress=progress)


def as_error(ex: Exchange) -> bool:
    return ex.plan is not None and ex.plan.policy.interventions.terminate.mode == "error"


def at_request(ex: Exchange) -> Response:
    """The executed history already crossed the terminate threshold: answer without upstream."""
    assert ex.plan is not None
    final = text(ex, ex.plan.judgement)
    ex.clock.took(ex.clock.started)
    log_request(ex, 200)
    if ex.stream and not as_error(ex):
        chunks = ex.adapter.termination_stream(final, ex.payload)
        return RelayStream(200, ex.verdict.headers([SSE]), _iterate(chunks))
    return _reply(ex, final)


def unary(ex: Exchange, refusal: Refusal) -> Response:
    """The model insists on a refused call and no re-ask is left: end the run."""
    ex.verdict.record(ex, refusal.judgement, Action.TERMINATE, "response")
    final = text(ex, refusal.judgement)
    log_request(ex, 200)
    return _reply(ex, final)


def stream(ex: Exchange, tool_filter: StreamFilter, refusal: Refusal) -> list[bytes]:
    """The same mid-stream: the client stream ends with the final text."""
    ex.verdict.record(ex, refusal.judgement, Action.TERMINATE, "response")
    final = text(ex, refusal.judgement)
    out = [note(Action.TERMINATE, refusal)]
    if as_error(ex):  # the SDK raises on an error payload mid-stream
        return [*out, ex.adapter.error_event(ex.adapter.error_body(final, LOOP, LOOP))]
    return [*out, *tool_filter.terminate(final)]


def note(action: Action, refusal: Refusal) -> bytes:
    """A decision taken after the headers went out, as an SSE comment clients skip."""
    finding = refusal.judgement.finding
    return comment(f"action={action.label} detector={finding.detector if finding else 'unknown'}")


def _reply(ex: Exchange, final: str) -> Response:
    if as_error(ex):
        assert ex.plan is not None
        body = codec.dumps(ex.adapter.error_body(final, LOOP, LOOP))
        return relay(ex.plan.policy.interventions.terminate.status, ex.verdict.headers([JSON]), body)
    return relay(200, ex.verdict.headers([JSON]), codec.dumps(ex.adapter.termination_reply(final, ex.payload)))


async def _iterate(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
