"""Trace.repeats: whether the latest call (or tool) occurs earlier in a window, from an index made
once per trace and carried over to the traces the response path judges (``with_events``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.trace.model import Status, ToolEvent, Trace


def event(tool: str, args: str, step: int = 1) -> ToolEvent:
    return ToolEvent(step, step, f"c{step}", tool, args, args, args, None, None, Status.OK, None)


def trace(*calls: str) -> Trace:
    """``"a1"``: tool ``a`` with arguments ``1``."""
    return Trace(tuple(event(c[0], c[1:], i) for i, c in enumerate(calls, 1)), (), 0, len(calls))


def naive(events: tuple[ToolEvent, ...], size: int, tool_only: bool) -> bool:
    window = events[-size:]
    if len(window) < 2:
        return False
    same = (
        (lambda e: e.tool == window[-1].tool)
        if tool_only
        else (lambda e: (e.tool, e.args_hash) == (window[-1].tool, window[-1].args_hash))
    )
    return any(map(same, window[:-1]))


@pytest.mark.parametrize(
    ("calls", "size", "tool_only", "expected"),
    [
        ((), 5, False, False),
        (("a1",), 5, False, False),
        (("a1", "a1"), 2, False, True),
        (("a1", "b2", "a1"), 3, False, True),
        (("a1", "b2", "a1"), 2, False, False),  # the earlier one is outside the window
        (("a1", "b2", "a2"), 3, False, False),  # same tool, other arguments
        (("a1", "b2", "a2"), 3, True, True),
        (("a1", "b2", "a2"), 2, True, False),
        (("a1", "a1", "b2", "a1"), 2, False, False),
        (("a1", "a1", "b2", "a1"), 99, False, True),  # a window wider than the trace
        (("a1", "b1"), 2, False, False),  # the same arguments to another tool
        (("a1", "b1"), 2, True, False),
        (("a1", "a1", "b2"), 3, False, False),  # repeats, but not the latest call
        (("a1", "a1", "b2"), 3, True, False),
    ],
)
def test_repeats(calls, size, tool_only, expected):
    assert trace(*calls).repeats(size, tool_only=tool_only) is expected


@pytest.mark.parametrize("read_first", [True, False])
def test_with_events_extends_the_index_of_the_trace_it_grows(read_first):
    base = trace("a1", "b2", "c3")
    if read_first:
        base.repeats(3)  # the request path's judge made the index
    grown = base.with_events((event("c", "3", 4), event("a", "1", 5)))
    assert grown.repeats(5) and not grown.repeats(4)
    assert grown.repeats(2, tool_only=False) is False
    assert base.with_events((event("c", "3", 4),)).repeats(2)
    assert not base.with_events((event("d", "4", 4),)).repeats(9, tool_only=True)


def test_index_is_not_part_of_the_value_and_not_copied_by_replace():
    base = trace("a1", "a1")
    assert base.repeats(2)
    fresh = trace("a1", "a1")
    assert base == fresh and hash(base.events) == hash(fresh.events)
    other = replace(base, events=(event("a", "1"), event("b", "2")))
    assert not other.repeats(2)  # a replaced trace indexes its own events


calls = st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("12")), max_size=12)


@given(
    calls,
    st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("12")), max_size=3),
    st.integers(1, 14),
    st.booleans(),
    st.booleans(),
)
def test_repeats_agrees_with_scanning_the_window(executed, proposed, size, tool_only, read_first):
    base = trace(*(t + a for t, a in executed))
    if read_first:
        base.repeats(size)
    grown = base.with_events(tuple(event(t, a, 100 + i) for i, (t, a) in enumerate(proposed)))
    for judged in (base, grown):  # one trace asked with several windows, as the detectors do
        for window, tools in ((size, tool_only), (1, tool_only), (14, not tool_only), (size, not tool_only)):
            assert judged.repeats(window, tool_only=tools) == naive(judged.events, window, tools)
