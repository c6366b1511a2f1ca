"""The response path of a turn that requires a tool (``gateway.guard.expectation``): corrective
re-asks, then the warning, for JSON answers and for streams.

A stream is held only when the request has an active expectation: each attempt is relayed into a
buffer (the tool-call filter and the veto logic run as usual), and only the final attempt goes to
the client, so it receives one valid stream. Every step fails open: the answer goes out as is.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

from gateway.guard import expectation
from gateway.guard.expectation import TurnGuard
from gateway.policy.actions import Action
from gateway.protocols.chat.sse import comment
from gateway.server.exchange import Exchange
from gateway.upstream.base import UpstreamResponse
from gateway.upstream.errors import UpstreamError

RelayOnce = Callable[..., AsyncIterator[bytes]]  # chat_stream.relay_once(ex, upstream, log=...)
KEEPALIVE_S = 15.0  # while an answer is held, a comment keeps idle-timeout proxies patient
_HOLDING = comment("holding")


def guard_for(ex: Exchange) -> TurnGuard | None:
    if ex.plan is None:
        return None
    try:
        return expectation.for_plan(ex.plan)
    except Exception:  # noqa: BLE001 - fail-open: rules must never break traffic
        ex.fail_open("required_tool")
        return None


# --- JSON answers ------------------------------------------------------------------------------


async def retry_unary(ex: Exchange, status: int, content: bytes) -> UpstreamResponse | None:
    """The re-asked upstream answer when the model answered without the required call."""
    guard = ex.expectation
    if guard is None or status != 200:
        return None
    try:
        answer = expectation.unary_answer(content)
    except Exception:  # noqa: BLE001 - an odd body goes to the agent untouched
        ex.fail_open("required_tool")
        return None
    if answer is None or answer.calls or not guard.miss():
        return None
    return await _retry(ex, guard, answer.text, stream=False)


def final_unary(ex: Exchange, status: int, content: bytes) -> bytes:
    """The answer for the client: with the warning when it still lacks the required call."""
    guard = ex.expectation
    if guard is None or status != 200:
        return content
    try:
        answer = expectation.unary_answer(content)
        if answer is None or answer.calls:
            return content
        ex.record(guard.judgement(Action.WARN), Action.WARN, "response")
        return expectation.unary_with_warning(content, guard.warning())
    except Exception:  # noqa: BLE001
        ex.fail_open("required_tool")
        return content


# --- streams -------------------------------------------------------------------------------------


async def relay_held(ex: Exchange, upstream: UpstreamResponse, relay_once: RelayOnce) -> AsyncIterator[bytes]:
    guard = ex.expectation
    assert guard is not None
    current, mark = upstream, time.monotonic()
    while True:
        held = bytearray()
        try:
            async for chunk in relay_once(ex, current, log=False):
                held += chunk
                if time.monotonic() - mark >= KEEPALIVE_S:
                    mark = time.monotonic()
                    yield _HOLDING
        except UpstreamError:  # relay_once broke the stream: the client's stream breaks too
            ex.log_request(200)
            raise
        finally:
            if current is not upstream:
                await current.aclose()
        answer = _stream_answer(ex, bytes(held))
        if answer is None or answer.calls or ex.action == Action.TERMINATE:
            yield bytes(held)
            break
        if guard.miss():
            retry = await _retry(ex, guard, answer.text, stream=True)
            if retry is not None:
                yield comment(f"action=reject detector={guard.finding.detector}")
                current = retry
                continue
        yield comment(f"action=warn detector={guard.finding.detector}")
        yield _with_warning(ex, guard, bytes(held))
        break
    ex.log_request(200)


def _stream_answer(ex: Exchange, stream: bytes) -> expectation.Answer | None:
    try:
        return expectation.stream_answer(stream)
    except Exception:  # noqa: BLE001
        ex.fail_open("required_tool")
        return None


def _with_warning(ex: Exchange, guard: TurnGuard, stream: bytes) -> bytes:
    try:
        out = expectation.stream_with_warning(stream, guard.warning())
    except Exception:  # noqa: BLE001
        ex.fail_open("required_tool")
        return stream
    ex.record(guard.judgement(Action.WARN), Action.WARN, "response")
    return out


async def _retry(ex: Exchange, guard: TurnGuard, answer: str, *, stream: bool) -> UpstreamResponse | None:
    """The corrective re-ask's upstream answer, or None when it failed: the held answer then
    goes out with the warning rather than an error in its place."""
    assert ex.plan is not None
    ex.record(guard.judgement(Action.REJECT), Action.REJECT, "response")
    ex.plan.messages = [*ex.plan.messages, *guard.corrective(answer)]
    try:
        retry = await ex.reask(stream=stream, counted=False)
    except UpstreamError as exc:
        ex.log.warning("reask_failed", error=type(exc).__name__, detector=guard.finding.detector)
        return None
    if retry.status != 200:
        ex.log.warning("reask_failed", status=retry.status, detector=guard.finding.detector)
        await retry.aclose()
        return None
    return retry
