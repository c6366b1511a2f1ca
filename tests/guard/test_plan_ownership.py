"""One owner per object: the guard builds a request's plan whole and frozen; every change is a
new plan, and the plan it came from stays as it was."""

import asyncio
import dataclasses
from pathlib import Path

import pytest
import structlog
from support.policies import example_policy, ladder_policy

from gateway.guard import plan as plans
from gateway.guard.expectation import for_plan
from gateway.guard.planner import plan_request
from gateway.policy.actions import Action
from gateway.policy.holder import PolicyHolder
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.state.base import HistoryMark
from gateway.state.memory import MemoryStore
from gateway.trace.model import ToolCall, WarnedCall

SESSION = {"x-loopguard-session": "run-1"}


def looping(calls: int = 3) -> list[dict]:
    """``calls`` identical read_file calls with identical results: warned at 3 by the ladder."""
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for i in range(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "same"},
        ]
    return messages


def planned(
    tmp_path: Path, items: list[dict], store: MemoryStore | None = None, policy: str | None = None
) -> plans.RequestPlan:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy or ladder_policy())
    payload = {"model": "m", "messages": items}
    return asyncio.run(
        plan_request(
            CHAT,
            payload,
            items,
            SESSION,
            "/v1/chat/completions",
            PolicyHolder(policy_file).current,
            store if store is not None else MemoryStore(),
            structlog.get_logger(),
        )
    )


def test_a_plan_cannot_be_edited_in_place(tmp_path):
    plan = planned(tmp_path, looping())
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.messages = []  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.trace = plan.trace  # type: ignore[misc]


def test_the_warning_is_in_the_plan_and_the_client_items_are_untouched(tmp_path):
    items = looping()
    sent = [dict(m) for m in items]
    plan = planned(tmp_path, items)
    assert plan.action == Action.WARN and plan.changed
    assert len(plan.messages) == len(items) + 1  # the anchor
    assert items == sent and plan.client_messages is items


def test_the_warning_given_is_remembered_once_in_the_store_and_the_trace(tmp_path):
    store = MemoryStore()
    plan = planned(tmp_path, looping(), store)
    assert plan.trace.warned == (WarnedCall("c2", "no_progress"),)
    state = asyncio.run(store.session_state(plan.session, HistoryMark(0, "")))
    assert state.warned == plan.trace.warned
    assert plans.warning_given(plan) is None  # already remembered: not again


def test_showing_an_exchange_is_a_new_plan(tmp_path):
    plan = planned(tmp_path, looping(2))
    before = list(plan.messages)
    exchange = CHAT.edits.veto_exchange(ToolCall("c9", "read_file", "{}"), "[loopguard] refused")
    shown = plans.showing(plan, exchange)
    assert shown is not plan and shown.messages == [*before, *exchange]
    assert plan.messages == before
    traced = plans.retraced(shown, CHAT.requests.conversation({}, shown.messages))
    assert [e.call_id for e in traced.trace.events][-1] == "c9"
    assert [e.call_id for e in shown.trace.events] == [e.call_id for e in plan.trace.events]


def test_as_sent_and_with_warned_leave_the_plan_they_came_from(tmp_path):
    plan = planned(tmp_path, looping(2))
    sent = plans.as_sent(plan, [{"role": "user", "content": "other"}])
    assert sent.messages == [{"role": "user", "content": "other"}] and plan.messages != sent.messages
    warned = plans.with_warned(plan, WarnedCall("c1", "no_progress"))
    assert warned.trace.warned == (WarnedCall("c1", "no_progress"),) and plan.trace.warned == ()


def test_a_missed_turn_is_a_new_turn_guard(tmp_path):
    plan = planned(tmp_path, [{"role": "user", "content": "show my holdings"}], policy=example_policy("portfolio"))
    guard = for_plan(plan)
    assert guard is not None and guard.max_retries == 2
    once = guard.missed()
    assert (guard.misses, once.misses) == (0, 1) and once.may_retry
    assert once.missed().may_retry and not once.missed().missed().may_retry
    with pytest.raises(dataclasses.FrozenInstanceError):
        guard.misses = 3  # type: ignore[misc]
