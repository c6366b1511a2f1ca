"""The adapter keeps the contract every protocol adapter implements."""

from __future__ import annotations

import dataclasses

from gateway.protocols import base
from gateway.protocols.anthropic.protocol import build as anthropic_adapter
from gateway.trace.builder import build_trace
from gateway.trace.settings import TraceSettings

from .payloads import body
from .streams import end, refuse, start, stream, tool
from .wire import assert_valid_request

A = anthropic_adapter()


def test_every_member_of_every_role_is_there():
    for role in ("requests", "edits", "replies", "streams", "authored", "history"):
        played = getattr(A, role)
        for member in dataclasses.fields(played):
            assert getattr(played, member.name) is not None, (role, member.name)
    assert A.name == "anthropic"


def test_the_filter_reports_its_round_like_every_filter():
    filt = A.streams.filter(refuse("read_file"), body())
    filt.feed(stream(start(), tool(0, "toolu_1", "read_file", "{}"), end()))
    view: base.RoundView = filt.round
    assert (view.rejected.name, view.rejected_position, len(view.dropped), view.kept) == ("read_file", 0, 1, [])
    assert filt.needs_decision


def test_a_request_the_gateway_warned_and_showed_a_refusal_to_is_still_valid():
    payload = body(stream=True)
    conv = A.requests.conversation(payload, A.requests.items(payload))
    trace = build_trace(conv, TraceSettings())
    latest = trace.latest
    items = A.edits.replace_result(A.requests.items(payload), 4, "[loopguard] rejected", latest.call_id)
    items = A.edits.add_anchor(items, "[LoopGuard] Loop detected.", "system")
    (proposed,) = A.replies.proposed_calls(
        {"content": [{"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "src/util.py"}}]}
    )
    items = [*items, *A.edits.veto_exchange(proposed[0], "[loopguard] rejected again")]
    out = A.edits.without_tools(A.outgoing(payload, items))
    assert_valid_request({k: v for k, v in out.items() if k != "stream"})
    assert A.requests.stream(out) and A.requests.model(out) == "claude-sonnet-4-6"
    assert out["system"][-1]["text"] == "[LoopGuard] Loop detected."
