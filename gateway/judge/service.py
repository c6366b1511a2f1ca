"""The judge's calls: started in the background by the request path, one at a time per session,
bounded by ``timeout_s``; the verdict goes to the session's state, the tokens to ``/metrics``.

A failure (unreachable, an error status, an answer that is no verdict, a timeout) is logged and
counted, and leaves the previous verdict alone: the judge is an aid, never a dependency.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import structlog

from gateway.config import UpstreamConfig
from gateway.detectors.judge import NAME, LlmJudgeSettings
from gateway.judge import prompt, schedule
from gateway.policy.engine import EffectivePolicy, Judgement
from gateway.protocols.chat import asking
from gateway.state.base import StateStore
from gateway.trace.model import Trace
from gateway.upstream.base import Upstream, UpstreamRequest
from gateway.upstream.build import build_upstream

PATH = "chat/completions"


class JudgeService:
    def __init__(self, upstream: Upstream, config: UpstreamConfig, store: StateStore, metrics: Any) -> None:
        self.upstream, self.config, self.store, self.metrics = upstream, config, store, metrics
        self.log = structlog.get_logger("loopguard.judge")
        self._running: dict[str, asyncio.Task[None]] = {}  # session -> its check in flight
        self._own: dict[str, Upstream] = {}  # base_url -> the upstream built for it

    def consider(
        self,
        policy: EffectivePolicy,
        session: str,
        trace: Trace,
        judgement: Judgement,
        model: Any,
        headers: list[tuple[bytes, bytes]],
    ) -> bool:
        """Start a check of this run when it is due; returns whether one was started.
        ``headers``: the request's own upstream headers (the client's credentials)."""
        settings = policy.detectors.get(NAME)
        if not isinstance(settings, LlmJudgeSettings) or session in self._running:
            return False
        if settings.base_url is None and not headers:
            return False  # no credentials for the gateway's upstream on this protocol
        if not schedule.due(trace, judgement, settings):
            return False
        name = settings.model or (model if isinstance(model, str) else None)
        if not name:
            return False
        task = asyncio.get_running_loop().create_task(self._check(session, trace, settings, name, headers))
        self._running[session] = task
        task.add_done_callback(lambda _: self._running.pop(session, None))
        return True

    async def _check(
        self, session: str, trace: Trace, settings: LlmJudgeSettings, model: str, headers: list[tuple[bytes, bytes]]
    ) -> None:
        try:
            async with asyncio.timeout(settings.timeout_s):
                answer, used = await self._ask(trace, settings, model, headers)
        except Exception as exc:
            self.metrics.judge_checked("failed", 0, 0)
            self.log.warning("judge_failed", session=session, error=type(exc).__name__, detail=str(exc)[:200])
            return
        if answer is None:
            self.metrics.judge_checked("failed", *used)
            self.log.warning("judge_failed", session=session, error="no_verdict")
            return
        verdict = schedule.next_verdict(trace, answer, settings)
        self.metrics.judge_checked("looping" if answer.looping else "clear", *used)
        self.log.info(
            "judge_verdict",
            session=session,
            looping=answer.looping,
            confidence=answer.confidence,
            reason=answer.reason,
            next_round=verdict.next_round,
        )
        self.store.save_verdict(session, verdict)

    async def _ask(
        self, trace: Trace, settings: LlmJudgeSettings, model: str, headers: list[tuple[bytes, bytes]]
    ) -> tuple[prompt.Answer | None, tuple[int, int]]:
        upstream, headers = self._route(settings, headers)
        response = await upstream.send(
            UpstreamRequest("POST", PATH, b"", headers, prompt.request_body(trace, settings, model))
        )
        try:
            body = await response.aread()
        finally:
            await response.aclose()
        if not 200 <= response.status < 300:
            raise RuntimeError(f"the judge's upstream answered {response.status}")
        answer, prompt_tokens, completion_tokens = prompt.read_answer(body)
        return answer, (prompt_tokens, completion_tokens)

    def _route(
        self, settings: LlmJudgeSettings, headers: list[tuple[bytes, bytes]]
    ) -> tuple[Upstream, list[tuple[bytes, bytes]]]:
        """The gateway's upstream with the client's headers, or the judge's own base URL with
        its own key (the client's credentials never go to a URL the operator named for the judge)."""
        if settings.base_url is None:
            return self.upstream, [(k, v) for k, v in headers if k != b"content-length"]
        upstream = self._own.get(settings.base_url)
        if upstream is None:
            config = self.config.model_copy(
                update={"base_url": settings.base_url.rstrip("/"), "api_key": None, "headers": {}}
            )
            upstream = self._own[settings.base_url] = build_upstream(config)
        own = [(b"content-type", b"application/json"), (b"accept-encoding", b"identity")]
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        if key:
            own.append(asking.key_header(key))
        return upstream, own

    async def aclose(self) -> None:
        for task in list(self._running.values()):
            task.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)
        for upstream in self._own.values():
            await upstream.aclose()
