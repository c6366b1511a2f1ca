"""One chat request in flight: what the client asked, what the guard planned, and the helpers
the unary and streaming response paths share (re-asking, vetoes, termination)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.audit.events import StoppedWork
from gateway.guard.audit import audit
from gateway.guard.expectation import TurnGuard
from gateway.guard.request import RequestPlan, veto_record
from gateway.guard.response import ProposalJudge, Refusal
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.protocols.chat import replies
from gateway.protocols.chat.parse import conversation_from_body
from gateway.server.context import Gateway
from gateway.trace.builder import build_trace
from gateway.upstream.base import UpstreamRequest, UpstreamResponse

ACTION_HEADER = b"x-loopguard-action"
DETECTOR_HEADER = b"x-loopguard-detector"


@dataclass(slots=True)
class Exchange:
    gateway: Gateway
    request_id: str
    path: str
    payload: dict[str, Any]
    body: bytes
    stream: bool
    outgoing: UpstreamRequest
    plan: RequestPlan | None  # None: the guard failed open, traffic is forwarded untouched
    log: Any
    started: float = field(default_factory=time.perf_counter)
    overhead_s: float = 0.0  # time spent in the gateway's own code
    upstream_s: float = 0.0  # time spent waiting for the upstream
    reasks: int = 0
    action: Action = Action.PASS
    detector: str | None = None
    expectation: TurnGuard | None = None  # the turn's required tool, when one is still pending

    # --- bookkeeping ------------------------------------------------------------------------

    def took(self, since: float) -> None:
        self.overhead_s += time.perf_counter() - since

    def waited(self, since: float) -> None:
        self.upstream_s += time.perf_counter() - since

    def log_request(self, status: int) -> None:
        self.log.info("request", method="POST", status=status, stream=self.stream, action=self.action.label,
                      upstream_ms=round(self.upstream_s * 1000, 3), overhead_ms=round(self.overhead_s * 1000, 3))
        self.gateway.metrics.exchange_done(self.overhead_s, self.upstream_s)

    def record(self, judgement: Judgement, action: Action, phase: str) -> None:
        if self.plan is not None:
            plan = self.plan
            audit(self.log, judgement, phase=phase, session=plan.session, policy=plan.policy.name,
                  action=action, bus=self.gateway.audit, agent=plan.policy.agent, trace=plan.trace,
                  request_id=self.request_id, work=StoppedWork(self.model, plan.messages))
        if action > self.action or (action == self.action and self.detector is None):
            self.action, self.detector = action, judgement.detector

    def headers(self, upstream_headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        out = [*upstream_headers, (ACTION_HEADER, self.action.label.encode())]
        if self.detector:
            out.append((DETECTOR_HEADER, self.detector.encode()))
        return out

    def fail_open(self, where: str) -> None:
        self.gateway.metrics.engine.fail_open_errors += 1
        self.log.exception("fail_open", where=where, request_id=self.request_id)

    # --- the response path ------------------------------------------------------------------

    def proposal_judge(self) -> ProposalJudge | None:
        if self.plan is None:
            return None
        return ProposalJudge(self.plan.policy, self.plan.trace)

    def may_reask(self, refusal: Refusal) -> bool:
        assert self.plan is not None
        limit = self.plan.policy.interventions.reject.max_reasks
        return not refusal.terminate and refusal.position == 0 and self.reasks < limit

    async def veto(self, refusal: Refusal) -> str:
        """Remember the refused call and extend what the model sees; returns the observation."""
        assert self.plan is not None
        plan = self.plan
        observation = plan.policy.render("reject", refusal.judgement.finding)
        self.record(refusal.judgement, Action.REJECT, "response")
        try:
            await self.gateway.store.add_veto(plan.session, veto_record(plan, refusal.call, observation))
        except Exception as exc:  # the veto still holds for this request; later ones may not see it
            self.log.warning("state_unavailable", op="add_veto", error=type(exc).__name__)
        plan.messages = [*plan.messages, replies.assistant_message_for([refusal.call]),
                         replies.veto_observation(refusal.call, observation)]
        plan.trace = build_trace(conversation_from_body({**self.payload, "messages": plan.messages}),
                                 plan.policy.trace_settings)
        return observation

    async def reask(self, stream: bool, *, counted: bool = True) -> UpstreamResponse:
        """Ask the model again, with its refused call and our observation in the history.
        ``counted=False``: a required-tool retry, which has its own budget (max_retries)."""
        assert self.plan is not None
        if counted:
            self.reasks += 1
        body = orjson.dumps({**self.payload, "messages": self.plan.messages})
        request = UpstreamRequest("POST", self.outgoing.path, self.outgoing.query, self.outgoing.headers, body)
        started = time.perf_counter()
        try:
            return await self.gateway.upstream.send(request)
        finally:
            self.waited(started)

    def termination_text(self, judgement: Judgement) -> str:
        assert self.plan is not None
        progress = self.plan.policy.progress(self.plan.trace)
        return self.plan.policy.render("terminate", judgement.finding, progress=progress)

    @property
    def terminate_as_error(self) -> bool:
        return self.plan is not None and self.plan.policy.interventions.terminate.mode == "error"

    @property
    def model(self) -> str:
        model = self.payload.get("model")
        return model if isinstance(model, str) else ""


def new_request_id(headers) -> str:
    return headers.get("x-request-id") or uuid.uuid4().hex

