"""One LiteLLM request as LoopGuard sees it: the plan of the request path, and what the response
hooks share (vetoes, re-asks through LiteLLM's router, the termination reply or error)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.audit.events import StoppedWork
from gateway.guard.audit import audit
from gateway.guard.request import RequestPlan, veto_record
from gateway.guard.response import ProposalJudge, Refusal
from gateway.integrations.litellm.runtime import Runtime
from gateway.integrations.litellm.session import client_body
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.protocols.chat import replies
from gateway.protocols.chat.adapter import CHAT
from gateway.protocols.chat.parse import conversation_from_body
from gateway.trace.builder import build_trace


@dataclass(slots=True)
class Turn:
    runtime: Runtime
    plan: RequestPlan
    data: dict[str, Any]  # LiteLLM's request dict
    request_id: str | None
    reasks: int = 0

    @property
    def model(self) -> str:
        model = self.data.get("model")
        return model if isinstance(model, str) else ""

    def record(self, judgement: Judgement, action: Action, phase: str) -> None:
        plan = self.plan
        audit(self.runtime.log, judgement, phase=phase, session=plan.session, policy=plan.policy.name,
              action=action, bus=self.runtime.audit, agent=plan.policy.agent, trace=plan.trace,
              request_id=self.request_id, work=StoppedWork(self.model, plan.messages))

    def proposal_judge(self) -> ProposalJudge:
        return ProposalJudge(self.plan.policy, self.plan.trace)

    def may_reask(self, refusal: Refusal) -> bool:
        limit = self.plan.policy.interventions.reject.max_reasks
        return not refusal.terminate and refusal.position == 0 and self.reasks < limit

    async def veto(self, refusal: Refusal) -> None:
        """Remember the refused call for the session and show it, with its observation, to the
        model on the re-ask and in later requests."""
        plan = self.plan
        observation = plan.policy.render("reject", refusal.judgement.finding)
        self.record(refusal.judgement, Action.REJECT, "response")
        try:
            record = veto_record(plan, CHAT.veto_exchange(refusal.call, observation), CHAT.declared.id_fields)
            await self.runtime.store.add_veto(plan.session, record)
        except Exception as exc:  # the veto still holds for this request; later ones may not see it
            self.runtime.log.warning("state_unavailable", op="add_veto", error=type(exc).__name__)
        plan.messages = [*plan.messages, replies.assistant_message_for([refusal.call]),
                         replies.veto_observation(refusal.call, observation)]
        body = {**client_body(self.data), "messages": plan.messages}
        plan.trace = build_trace(conversation_from_body(body), plan.policy.trace_settings)

    async def reask(self, *, stream: bool) -> Any:
        """The model again, through the proxy's router (its deployments, keys and retries), with
        the refused call and the observation in the history."""
        self.reasks += 1
        kwargs = {**client_body(self.data), "messages": self.plan.messages, "stream": stream}
        router = _router()
        if router is not None:
            return await router.acompletion(**kwargs)
        import litellm  # noqa: PLC0415 - a guardrail used outside the proxy: litellm directly

        return await litellm.acompletion(**kwargs)

    def termination_text(self, judgement: Judgement) -> str:
        progress = self.plan.policy.progress(self.plan.trace)
        return self.plan.policy.render("terminate", judgement.finding, progress=progress)

    @property
    def terminate_as_error(self) -> bool:
        return self.plan.policy.interventions.terminate.mode == "error"

    def termination_error(self, text: str) -> Exception:
        """LiteLLM's guardrail error, with the policy's status (422: SDKs do not retry it)."""
        from litellm.exceptions import GuardrailRaisedException  # noqa: PLC0415

        status = self.plan.policy.interventions.terminate.status
        return GuardrailRaisedException(guardrail_name="loopguard", message=text,
                                        should_wrap_with_default_message=False, status_code=status)


def _router() -> Any:
    try:
        from litellm.proxy.proxy_server import llm_router  # noqa: PLC0415 - only inside the proxy
    except ImportError:
        return None
    return llm_router
