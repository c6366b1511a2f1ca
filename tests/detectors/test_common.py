"""The window helpers detectors share."""

from __future__ import annotations

import pytest

from gateway.detectors.common import repeats_call, repeats_tool
from gateway.trace.model import Status, ToolEvent


def event(tool: str, args_hash: str, step: int) -> ToolEvent:
    return ToolEvent(step, step, f"c{step}", tool, "{}", "{}", args_hash, None, None, Status.MISSING, None)


def window(*calls: tuple[str, str]) -> tuple[ToolEvent, ...]:
    return tuple(event(tool, args, i + 1) for i, (tool, args) in enumerate(calls))


@pytest.mark.parametrize(("calls", "call", "tool"), [
    ([("read", "a")], False, False),
    ([("read", "a"), ("read", "b")], False, True),
    ([("read", "a"), ("grep", "a")], False, False),  # same arguments, another tool
    ([("read", "a"), ("grep", "x"), ("read", "a")], True, True),
    ([("read", "a"), ("read", "a"), ("grep", "x")], False, False),  # repeats, but not the latest
])
def test_repeats_of_the_latest_call_and_tool(calls, call, tool):
    events = window(*calls)
    assert repeats_call(events) is call
    assert repeats_tool(events) is tool
