"""Each protocol's conversations are sessions of their own: entries stored in one wire format
are never shown in another's request."""

import asyncio
from dataclasses import replace

import structlog

from gateway.config import Config
from gateway.guard.plan import veto_record
from gateway.guard.planner import plan_request
from gateway.policy.holder import PolicyHolder
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.state.memory import MemoryStore
from gateway.state.session import is_fingerprint
from gateway.trace.model import ToolCall

# every protocol but chat prefixes its keys
OTHER = replace(CHAT, name="other", declared=replace(CHAT.declared, session_prefix=True))


def plan(adapter, payload, store):
    policies = PolicyHolder(Config().policy)
    return asyncio.run(
        plan_request(
            adapter,
            payload,
            adapter.requests.items(payload),
            {"x-loopguard-session": "run-1"},
            "/v1/chat/completions",
            policies.current,
            store,
            structlog.get_logger(),
        )
    )


def test_a_vetoed_exchange_stays_in_its_protocol():
    store = MemoryStore()
    payload = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    first = plan(CHAT, payload, store)
    exchange = CHAT.edits.veto_exchange(ToolCall("c1", "read_file", "{}"), "[loopguard] refused")
    asyncio.run(store.add_veto(first.session, veto_record(first, exchange)))
    assert len(plan(CHAT, payload, store).messages) == 3  # shown again in its own protocol
    other = plan(OTHER, payload, store)
    assert first.session == "h:run-1"  # chat keys stay bare, as stored before other protocols
    assert other.session == "other:" + first.session and other.messages == payload["messages"]


def test_a_protocol_s_fingerprint_session_is_still_known_as_one():
    payload = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    policies = PolicyHolder(Config().policy)
    planned = asyncio.run(
        plan_request(
            OTHER,
            payload,
            payload["messages"],
            {},
            "/v1/x",
            policies.current,
            MemoryStore(),
            structlog.get_logger(),
        )
    )
    assert planned.session.startswith("other:f:") and is_fingerprint(planned.session)
