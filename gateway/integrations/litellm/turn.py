"""One LiteLLM request as LoopGuard sees it: the plan of the request path, and what the response
hooks share (vetoes, re-asks and final answers through LiteLLM's router, the termination reply
or error). The protocol's wire format is its adapter's business, as in the gateway."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from gateway.audit.events import StoppedWork
from gateway.guard import decision as core
from gateway.guard import store as memory
from gateway.guard.audit import audit
from gateway.guard.plan import RequestPlan, retraced, showing, veto_record
from gateway.guard.response import Refusal
from gateway.integrations.litellm.runtime import Runtime
from gateway.integrations.litellm.session import client_body
from gateway.integrations.litellm.wire import Wire
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement


@dataclass(slots=True)
class Turn:
    """The guardrail's own record of one request (as the pipeline's ``Exchange`` is the
    gateway's): its fields are set by the guardrail's hooks; ``plan`` is the guard's, frozen,
    and replaced by a new one (``gateway.guard.plan``), never edited."""

    runtime: Runtime
    wire: Wire
    plan: RequestPlan
    data: dict[str, Any]  # LiteLLM's request dict
    request_id: str | None
    reasks: int = 0
    answering: Judgement | None = None  # the request asks for the run's final answer (tools closed)

    @property
    def adapter(self) -> Any:
        return self.wire.adapter

    @property
    def model(self) -> str:
        model = self.data.get("model")
        return model if isinstance(model, str) else ""

    @property
    def payload(self) -> dict[str, Any]:
        """The request as the model gets it next: the client's fields, the conversation so far."""
        return {**client_body(self.data), self.adapter.requests.items_field: self.plan.messages}

    def record(self, judgement: Judgement, action: Action, phase: str, terminate: str | None = None) -> None:
        plan = self.plan
        audit(
            self.runtime.log,
            judgement,
            phase=phase,
            session=plan.session,
            policy=plan.policy.name,
            action=action,
            bus=self.runtime.audit,
            agent=plan.policy.agent,
            trace=plan.trace,
            request_id=self.request_id,
            work=StoppedWork(self.model, plan.messages),
            terminate=terminate,
        )

    async def veto(self, refusal: Refusal) -> None:
        """Remember the refused call for the session and show it, with its observation, to the
        model on the re-ask and in later requests."""
        plan = self.plan
        observation = core.observation(plan.policy, refusal.judgement)
        self.record(refusal.judgement, Action.REJECT, "response")
        exchange = self.adapter.edits.veto_exchange(refusal.call, observation)
        record = veto_record(plan, exchange, self.adapter.declared.id_fields)
        await memory.add_veto(self.runtime.store, plan.session, record, self.runtime.log)
        self.plan = showing(plan, exchange)
        self.plan = retraced(self.plan, self.adapter.requests.conversation(self.payload, self.plan.messages))

    async def reask(self, *, stream: bool) -> Any:
        self.reasks += 1
        return await self.call({**self.payload, "stream": stream})

    def answer_payload(self, judgement: Judgement) -> dict[str, Any]:
        """The request for the run's final answer: the loop's note where the model reads it
        first, tools closed the protocol's way."""
        policy = self.plan.policy
        note = policy.render("answer", judgement.finding, progress=policy.progress(self.plan.trace))
        items = self.adapter.edits.add_anchor(self.plan.messages, note, policy.interventions.warn.placement)
        payload: dict[str, Any] = self.adapter.edits.without_tools(
            {**client_body(self.data), self.adapter.requests.items_field: items}
        )
        return payload

    async def call(self, payload: dict[str, Any]) -> Any:
        """The model once more, through the proxy's router (its deployments, keys, retries,
        price and spend logging), as the client's key: the call is billed to it like any other."""
        kwargs = {**payload}
        metadata = self.data.get(self.wire.metadata_key)
        if isinstance(metadata, dict):
            kwargs[self.wire.metadata_key] = {**metadata}
        router = _router()
        if router is not None:
            return await getattr(router, self.wire.router_call)(**kwargs)
        import litellm

        return await getattr(litellm, self.wire.router_call)(**kwargs)

    async def final_answer(self, judgement: Judgement, *, stream: bool) -> Any | None:
        """The model's own final answer (tools closed), through the router; None when the call
        failed (the template ends the run then)."""
        try:
            return await self.call({**self.answer_payload(judgement), "stream": stream})
        except Exception as exc:
            self.runtime.log.warning("terminate_answer_fallback", reason=type(exc).__name__, request_id=self.request_id)
            return None

    def end_with_error(self, judgement: Judgement, phase: str) -> NoReturn:
        """Terminate mode ``error``: recorded, then LiteLLM's guardrail error."""
        self.record(judgement, Action.TERMINATE, phase, core.ERROR)
        raise self.termination_error(self.termination_text(judgement))

    def termination_text(self, judgement: Judgement) -> str:
        return core.final_text(self.plan.policy, self.plan.trace, judgement)

    def termination_reply(self, judgement: Judgement) -> Any:
        """The template reply (terminate mode ``reply``, or an answer that failed), as LiteLLM's object."""
        return self.wire.response(
            self.adapter.authored.termination_reply(self.termination_text(judgement), self.payload)
        )

    @property
    def ending(self) -> str:
        return core.ending(self.plan.policy)

    def termination_error(self, text: str) -> Exception:
        """LiteLLM's guardrail error, with the policy's status (422: SDKs do not retry it)."""
        from litellm.exceptions import GuardrailRaisedException

        status = self.plan.policy.interventions.terminate.status
        return GuardrailRaisedException(
            guardrail_name="loopguard", message=text, should_wrap_with_default_message=False, status_code=status
        )


def _router() -> Any:
    try:
        from litellm.proxy.proxy_server import llm_router
    except ImportError:
        return None
    return llm_router
