"""A turn that requires a tool (``gateway.guard.expectation``) on the response path: the
corrective re-ask while the model answers without it, then the warning in front of its answer.

The adapter reads the answer and writes the corrective entries and the warning. Every step
fails open: the answer goes out as it is.
"""

from __future__ import annotations

from typing import Any

from gateway.guard.expectation import TurnGuard
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.verdict import fail_open
from gateway.pipeline.vetoes import reask, show
from gateway.policy.actions import Action
from gateway.protocols.base import Answer
from gateway.protocols.sse import comment
from gateway.upstream.base import UpstreamResponse
from gateway.upstream.errors import UpstreamError


def plain_answer(ex: Exchange, reply: dict[str, Any] | None = None, stream: bytes | None = None) -> Answer | None:
    """The answer when it has no tool call and the turn still expects one; else None."""
    if ex.expectation is None:
        return None
    try:
        if stream is not None:
            said = ex.adapter.streams.answer(stream)
        else:
            assert reply is not None  # a unary reply or a stream: one of them
            said = ex.adapter.replies.answer(reply)
    except Exception:
        fail_open(ex, "required_tool")
        return None
    return said if said is not None and not said.calls else None


async def retry(ex: Exchange, said: Answer) -> UpstreamResponse | None:
    """The corrective re-ask's upstream answer while retries are left; None when none are left
    or it failed (the held answer then goes out with the warning rather than an error)."""
    assert ex.expectation is not None and ex.plan is not None
    guard = ex.expectation = ex.expectation.missed()
    if not guard.may_retry:
        return None
    ex.verdict.record(ex, guard.judgement(Action.REJECT), Action.REJECT, "response")
    show(ex, ex.adapter.edits.corrective(said.text, guard.correction()))
    try:
        answer = await reask(ex, counted=False)
    except UpstreamError as exc:
        ex.log.warning("reask_failed", error=type(exc).__name__, detector=guard.finding.detector)
        return None
    if answer.status != 200:
        ex.log.warning("reask_failed", status=answer.status, detector=guard.finding.detector)
        await answer.aclose()
        return None
    return answer


def warn_reply(ex: Exchange, reply: dict[str, Any]) -> dict[str, Any]:
    guard = ex.expectation
    assert guard is not None
    try:
        out = ex.adapter.replies.prepend_text(reply, guard.warning())
    except Exception:
        fail_open(ex, "required_tool")
        return reply
    ex.verdict.record(ex, guard.judgement(Action.WARN), Action.WARN, "response")
    return out


def warn_stream(ex: Exchange, stream: bytes) -> list[bytes]:
    guard = ex.expectation
    assert guard is not None
    try:
        out = ex.adapter.streams.prepend_text(stream, guard.warning())
    except Exception:
        fail_open(ex, "required_tool")
        return [stream]
    ex.verdict.record(ex, guard.judgement(Action.WARN), Action.WARN, "response")
    return [note(guard, Action.WARN), out]


def note(guard: TurnGuard, action: Action) -> bytes:
    return comment(f"action={action.label} detector={guard.finding.detector}")
