"""The non-streaming reply: judge its proposed calls; veto, re-ask (a loop) or terminate; a
turn's required tool; then relay it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from starlette.responses import Response

from gateway.guard.decision import Judged, Move
from gateway.guard.response import Refusal
from gateway.guard.settle import settle
from gateway.pipeline import expect, terminate
from gateway.pipeline.exchange import Exchange
from gateway.pipeline.judging import judge_reply, record_dropped
from gateway.pipeline.remember import remember
from gateway.pipeline.request_log import LogWhenSent
from gateway.pipeline.verdict import fail_open
from gateway.pipeline.vetoes import reask, veto
from gateway.policy.engine import EffectivePolicy
from gateway.upstream.base import UpstreamResponse
from gateway.upstream.errors import UpstreamError, UpstreamInvalidReply
from gateway.web.refused import upstream_failed
from gateway.web.responses import relay
from gateway.wire import codec


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: list[tuple[bytes, bytes]]
    content: bytes
    parsed: Any  # the reply as judged (Adapter.reply_types); None: not such a 200 reply: relayed as is


async def respond(ex: Exchange, upstream: UpstreamResponse) -> Response:
    try:
        reply = await _settle(ex, upstream)
    except UpstreamError as exc:
        return upstream_failed(ex.gateway, exc, ex.path, shape=ex.adapter.authored.error_body)
    if isinstance(reply, Response):  # terminated
        return reply
    if reply.parsed is not None:
        ex.reply = reply.parsed
        await remember(ex)
    response = relay(reply.status, ex.verdict.headers(reply.headers), reply.content)
    response.background = LogWhenSent(ex, reply.status)  # the client does not wait for its log line
    return response


async def _settle(ex: Exchange, current: UpstreamResponse) -> Reply | Response:
    """Read, judge and act until a reply may go to the client (``gateway.guard.settle``: each
    re-ask is a new round), or the run is terminated; a plain answer to a turn that requires a
    tool is re-asked here (its own budget) and judged again."""
    front = _Front(ex)
    reply = await _read(ex, current)
    while True:
        settled = await settle(front, reply)
        reply, decision = settled.reply, settled.decision
        if decision.move == Move.TERMINATE:
            return await terminate.unary(ex, decision, reply.parsed)
        if decision.move != Move.PASS or reply.parsed is None:
            return reply
        said = expect.plain_answer(ex, reply.parsed)
        if said is None:
            return reply
        if (retry := await expect.retry(ex, said)) is None:
            return _edited(ex, reply, expect.warn_reply(ex, reply.parsed))
        reply = await _read(ex, retry)


class _Front:
    """The pipeline's side of the settling loop: replies read from the upstream."""

    __slots__ = ("ex",)

    def __init__(self, ex: Exchange) -> None:
        self.ex = ex

    @property
    def policy(self) -> EffectivePolicy | None:
        return self.ex.plan.policy if self.ex.plan is not None else None

    @property
    def reasks(self) -> int:
        return self.ex.reasks

    def judged(self, reply: Reply) -> Judged | None:
        return judge_reply(self.ex, reply.parsed) if reply.parsed is not None else None

    async def veto(self, refusal: Refusal) -> None:
        await veto(self.ex, refusal)

    def dropped(self, others: Sequence[Refusal]) -> None:
        record_dropped(self.ex, others)

    def keep_calls(self, reply: Reply, keep: tuple[int, ...]) -> Reply:
        return _edited(self.ex, reply, self.ex.adapter.replies.keep_calls(reply.parsed, keep))

    async def reask(self) -> Reply:
        return await _read(self.ex, await reask(self.ex))


async def _read(ex: Exchange, upstream: UpstreamResponse) -> Reply:
    started = time.perf_counter()
    try:
        status, headers, content = upstream.status, upstream.headers, await upstream.aread()
    finally:
        await upstream.aclose()
        ex.clock.waited(started)
    return Reply(status, headers, content, _parsed(ex, status, content))


def _parsed(ex: Exchange, status: int, content: bytes) -> Any:
    """The reply as judged; None for one relayed as it is (an error status). A success (any
    2xx: an SDK reads a 201 as it reads a 200) that is not the protocol's JSON reply (no JSON,
    an array where an object is the reply) is refused, never relayed unjudged."""
    if ex.plan is None or not 200 <= status < 300:
        return None
    started = time.perf_counter()
    try:
        data = codec.loads(content)
    except codec.DecodeError:
        raise UpstreamInvalidReply("the upstream answered a success with a body that is not JSON") from None
    finally:
        ex.clock.took(started)
    if not isinstance(data, ex.adapter.replies.reply_types):
        raise UpstreamInvalidReply("the upstream answered a success with JSON that is not its protocol's reply")
    return data


def _edited(ex: Exchange, reply: Reply, parsed: dict[str, Any]) -> Reply:
    if parsed is reply.parsed:
        return reply
    try:
        return replace(reply, content=codec.dumps(parsed), parsed=parsed)
    except Exception:
        fail_open(ex, "response")
        return reply
