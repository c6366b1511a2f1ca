"""The adapter keeps the contract every protocol adapter implements."""

from __future__ import annotations

import inspect

from gateway.protocols import base
from gateway.protocols.anthropic import AnthropicAdapter
from gateway.trace.builder import build_trace
from gateway.trace.settings import TraceSettings

from .payloads import body
from .streams import end, refuse, start, stream, tool
from .wire import assert_valid_request

A = AnthropicAdapter()


def test_every_member_of_the_interface_is_there_with_its_parameters():
    for name, member in inspect.getmembers(base.Adapter, inspect.isfunction):
        if name.startswith("_"):
            continue
        ours = getattr(AnthropicAdapter, name)
        wanted = list(inspect.signature(member).parameters)
        assert list(inspect.signature(ours).parameters)[: len(wanted)] == wanted, name
    assert A.name == "anthropic"


def test_the_filter_reports_its_round_like_every_filter():
    filt = A.stream_filter(refuse("read_file"), body())
    filt.feed(stream(start(), tool(0, "toolu_1", "read_file", "{}"), end()))
    view: base.RoundView = filt.round
    assert (view.rejected.name, view.rejected_position, len(view.dropped), view.kept) == ("read_file", 0, 1, [])
    assert filt.needs_decision


def test_a_request_the_gateway_warned_and_showed_a_refusal_to_is_still_valid():
    payload = body(stream=True)
    conv = A.conversation(payload, A.items(payload))
    trace = build_trace(conv, TraceSettings())
    latest = trace.latest
    items = A.replace_result(A.items(payload), 4, "[loopguard] rejected", latest.call_id)
    items = A.add_anchor(items, "[LoopGuard] Loop detected.", "system")
    (proposed,) = A.proposed_calls(
        {"content": [{"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "src/util.py"}}]}
    )
    items = [*items, *A.veto_exchange(proposed[0], "[loopguard] rejected again")]
    out = A.without_tools(A.with_items(payload, items))
    assert_valid_request({k: v for k, v in out.items() if k != "stream"})
    assert A.stream(out) and A.model(out) == "claude-sonnet-4-6"
    assert out["system"][-1]["text"] == "[LoopGuard] Loop detected."
