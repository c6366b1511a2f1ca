"""Each app builds its own protocol adapters (``registry.build``): what one app's adapters
remember between the calls of an exchange (a chain's size, a call's kind) is never read through
another app in the same process, even when both share one state store."""

from __future__ import annotations

import pytest
from support.responses_wire import custom_call, function_call, response

from gateway.config import Config
from gateway.protocols.roles import Adapter
from gateway.server.app import build_app
from gateway.state import MemoryStore
from gateway.trace.model import ToolCall

NS = "c:" + "a" * 24 + ":"
USER = {"role": "user", "content": "Summarize a.txt"}


def responses_of_two_apps(store: MemoryStore, name: str = "responses") -> tuple[Adapter, Adapter]:
    first, second = (build_app(Config(), store=store) for _ in range(2))
    return tuple(app.state.gateway.protocols.named(name) for app in (first, second))  # type: ignore[return-value]


@pytest.mark.parametrize("name", ["responses", "azure_responses"])
async def test_a_chain_read_by_one_app_is_not_known_to_another(name):
    store = MemoryStore()
    mine, theirs = responses_of_two_apps(store, name)
    assert mine.history is not None and theirs.history is not None and mine.history is not theirs.history
    first = {"model": "gpt-4.1", "input": [USER]}
    await mine.history.remember(first, response([function_call("read_file", "{}", "call_1")], "resp_1"), store, NS)
    later = {"model": "gpt-4.1", "previous_response_id": "resp_1", "input": [_output("call_1")]}
    history = await mine.history.history(later, store, NS)
    items = [*history, *mine.requests.items(later)]
    # The app that read the chain knows the upstream holds it: the request goes as it came.
    assert mine.outgoing(later, items, len(history), NS) is later
    # The other app never read it (same store, its own memory): it sends every item it was given.
    assert theirs.outgoing(later, items, len(history), NS)["input"] == items


@pytest.mark.parametrize("name", ["responses", "azure_responses"])
async def test_a_call_kind_one_app_saw_is_not_known_to_another(name):
    mine, theirs = responses_of_two_apps(MemoryStore(), name)
    mine.replies.proposed_calls(response([custom_call("apply_patch", "x", "call_c")], "resp_c"))
    refused = ToolCall("call_c", "apply_patch", "x")
    assert mine.edits.veto_exchange(refused, "no")[0]["type"] == "custom_tool_call"
    assert theirs.edits.veto_exchange(refused, "no")[0]["type"] == "function_call"


def _output(call_id: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": "same content"}
