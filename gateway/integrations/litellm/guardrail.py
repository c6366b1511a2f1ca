"""The LiteLLM guardrail: LiteLLM's hooks mapped onto LoopGuard's request and response paths.

Chat Completions (``acompletion``), the Responses API (``aresponses``) and Anthropic Messages
(``anthropic_messages``) are guarded, each through the gateway's adapter for it; decisions come
from the gateway's decision core, so the guardrail acts as the gateway does.

- ``pre_call`` (``async_pre_call_hook``): judge the executed history. warn: the anchor goes
  into the conversation LiteLLM sends; terminate: the run ends as ``interventions.terminate.mode``
  says (``gateway.integrations.litellm.ending``): by default the request becomes the call for
  the model's own final answer, tools closed.
- ``during_call`` (``async_moderation_hook``): the same judgement while the model already runs;
  it can only end the request (an error), so a warn is recorded as held back.
- ``post_call`` (``async_post_call_success_hook``, ``async_post_call_streaming_iterator_hook``):
  judge each proposed tool call; a refused one is vetoed and the model re-asked through the
  proxy's router, a terminate-level one (or an insisting model) ends the run. Streams relay
  content at once and hold tool-call chunks only until judged.

Every failure of LoopGuard's own code lets the request through untouched (fail-open, logged).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.guardrails import GuardrailEventHooks

from gateway.guard.plan import as_sent
from gateway.guard.planner import plan_request
from gateway.integrations.litellm import ending, stream, unary
from gateway.integrations.litellm.runtime import Runtime
from gateway.integrations.litellm.session import RESOLVED, SESSION_HEADER, client_body, client_headers, session_of
from gateway.integrations.litellm.turn import Turn
from gateway.integrations.litellm.wire import Wires
from gateway.policy.actions import Action

_DONE = object()  # the request path already answered (terminated): the response hooks skip it
_MAX_TURNS = 10_000  # requests between their pre-call and response hooks


class LoopGuardrail(CustomGuardrail):
    def __init__(self, loopguard_policy: str | None = None, loopguard_config: str | None = None, **kwargs: Any) -> None:
        self.loopguard = Runtime.build(loopguard_policy, loopguard_config)
        self._turns: OrderedDict[str, Any] = OrderedDict()
        self._wires = Wires()
        super().__init__(**kwargs)
        # With post_call alone, the response hooks plan the request themselves.
        self._judges_history = bool(_modes(self.event_hook) & _HISTORY_MODES)

    # --- LiteLLM's hooks -----------------------------------------------------------------------

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> Any:
        turn = await self._plan(user_api_key_dict, data, call_type)
        if turn is None or turn.plan.judgement.finding is None:
            return data
        plan = turn.plan
        if plan.action == Action.TERMINATE:
            if turn.ending != "answer":  # the answer's turn stays: its response hooks check the answer
                self._turns[turn.request_id or ""] = _DONE
            return ending.at_request(turn, plan.judgement)
        turn.record(plan.judgement, plan.action, "request")
        if plan.changed:
            data[turn.adapter.requests.items_field] = plan.messages
        return data

    async def async_moderation_hook(self, data: dict[str, Any], user_api_key_dict: Any, call_type: str) -> Any:
        turn = await self._plan(user_api_key_dict, data, call_type)
        if turn is None:
            return None
        # The request is already on its way: only an end can still be applied, and a re-ask
        # continues from what the model was actually sent.
        plan = turn.plan = as_sent(turn.plan, data[turn.adapter.requests.items_field])
        if plan.judgement.finding is None:
            return None
        applied = Action.TERMINATE if plan.action == Action.TERMINATE else Action.PASS
        turn.record(plan.judgement, applied, "request", "error" if applied == Action.TERMINATE else None)
        if applied == Action.TERMINATE:
            self._turns[turn.request_id or ""] = _DONE
            raise turn.termination_error(turn.termination_text(plan.judgement))
        return None

    async def async_post_call_success_hook(self, data: dict[str, Any], user_api_key_dict: Any, response: Any) -> Any:
        turn = await self._turn(user_api_key_dict, data)
        if turn is None:
            return None
        return await unary.respond(turn, response)

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> Any:
        turn = await self._turn(user_api_key_dict, request_data)
        if turn is None or not stream.judges(turn):
            async for chunk in response:
                yield chunk
            return
        async for chunk in stream.relay(turn, response):
            yield chunk

    # --- LoopGuard's request path --------------------------------------------------------------

    async def _plan(self, user_api_key_dict: Any, data: dict[str, Any], call_type: Any = None) -> Turn | None:
        """Judge the executed history; None when there is nothing to guard or the guard failed."""
        wire = self._wires.of(call_type, data)
        if wire is None or wire.adapter.requests.items_field not in data:
            return None
        runtime = self.loopguard
        call_id = data.get("litellm_call_id")
        try:
            await runtime.ensure_started()
            adapter = wire.adapter
            payload = {**client_body(data), adapter.requests.items_field: data[adapter.requests.items_field]}
            items = adapter.requests.items(payload)
            key = getattr(user_api_key_dict, "api_key", None) or getattr(user_api_key_dict, "token", None)
            start = adapter.requests.conversation(payload, items)
            headers = {**client_headers(data), SESSION_HEADER: session_of(data, key, runtime.config.sessions, start)}
            plan = await plan_request(
                adapter,
                payload,
                items,
                headers,
                wire.path,
                runtime.policies.current,
                runtime.store,
                runtime.log,
                sessions=RESOLVED,
            )
            runtime.metrics.judged(plan.session, plan.judgement)
        except Exception:
            _fail_open(runtime, "request", call_id)
            return None
        turn = Turn(runtime, wire, plan, data, call_id)
        if call_id:
            self._remember(call_id, turn)
        return turn

    async def _turn(self, user_api_key_dict: Any, data: dict[str, Any]) -> Turn | None:
        """The request's turn from its pre-call hook; planned now when only post_call is on."""
        call_id = data.get("litellm_call_id")
        found = self._turns.pop(call_id, None) if call_id else None
        if found is _DONE:
            return None
        if isinstance(found, Turn):
            found.data = data
            return found
        if not self._judges_history:
            return await self._plan(user_api_key_dict, data)  # post_call alone: history judged, not acted on
        return None  # the request path ran and failed open (or skipped): so does the response path

    def _remember(self, call_id: str, turn: Turn) -> None:
        self._turns[call_id] = turn
        while len(self._turns) > _MAX_TURNS:
            self._turns.popitem(last=False)


def _fail_open(runtime: Runtime, where: str, call_id: str | None) -> None:
    runtime.metrics.engine.fail_open_errors += 1
    runtime.log.exception("fail_open", where=where, request_id=call_id)


def _modes(event_hook: Any) -> set[str]:
    """The configured ``mode`` as names; a tag-based mode counts as every mode."""
    if isinstance(event_hook, (str, GuardrailEventHooks)):
        return {str(getattr(event_hook, "value", event_hook))}
    if isinstance(event_hook, list):
        return {str(getattr(h, "value", h)) for h in event_hook}
    return set(_HISTORY_MODES)


_HISTORY_MODES = frozenset({GuardrailEventHooks.pre_call.value, GuardrailEventHooks.during_call.value})
