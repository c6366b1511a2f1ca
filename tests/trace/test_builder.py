"""Conversation -> Trace: pairing, scope, steps and rounds, status, vetoes, proposed calls, horizon."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.trace.builder import build_trace, proposed_events, run_start
from gateway.trace.model import VETO_MARKER, Conversation, Status, ToolCall, Trace, Turn
from gateway.trace.settings import TraceSettings

SETTINGS = TraceSettings()


def convo(*turns: tuple, tools: set[str] | None = None) -> Conversation:
    """Turns written as ("user", text) | ("assistant", [(id, name, args), ...]) |
    ("tool", call_id, text) | ("function", name, text)."""
    out = []
    for i, turn in enumerate(turns):
        role = turn[0]
        if role == "assistant":
            out.append(Turn(i, "assistant", "", tuple(ToolCall(*c) for c in turn[1])))
        elif role == "tool":
            out.append(Turn(i, "tool", turn[2], tool_call_id=turn[1]))
        elif role == "function":
            out.append(Turn(i, "tool", turn[2], name=turn[1]))
        else:
            out.append(Turn(i, role, turn[1]))
    return Conversation(tuple(out), frozenset(tools) if tools is not None else None)


def build(*turns: tuple, settings: TraceSettings = SETTINGS, **kw) -> Trace:
    return build_trace(convo(*turns, **kw), settings)


def results(trace: Trace) -> list[tuple[str, str | None]]:
    return [(e.tool, e.result) for e in trace.events]


def test_pairs_by_call_id_across_parallel_calls_in_any_order():
    trace = build(
        ("user", "go"),
        ("assistant", [("a", "read", "{}"), ("b", "grep", "{}")]),
        ("tool", "b", "grep out"),
        ("tool", "a", "read out"),
    )
    assert results(trace) == [("read", "read out"), ("grep", "grep out")]
    assert [(e.step, e.round, e.message_index) for e in trace.events] == [(1, 1, 1), (2, 1, 1)]


def test_reused_ids_pair_with_the_nearest_following_result():
    trace = build(
        ("user", "go"),
        ("assistant", [("call_0", "read", '{"p": 1}')]),
        ("tool", "call_0", "first"),
        ("assistant", [("call_0", "read", '{"p": 2}')]),
        ("tool", "call_0", "second"),
    )
    assert results(trace) == [("read", "first"), ("read", "second")]


def test_unanswered_call_superseded_by_a_reused_id():
    trace = build(
        ("user", "go"),
        ("assistant", [("call_0", "read", "{}")]),
        ("assistant", [("call_0", "grep", "{}")]),
        ("tool", "call_0", "grep out"),
    )
    assert results(trace) == [("read", None), ("grep", "grep out")]
    assert trace.events[0].status is Status.MISSING


def test_results_without_a_call_are_ignored():
    trace = build(
        ("user", "go"),
        ("tool", "ghost", "orphan"),
        ("assistant", [("a", "read", "{}")]),
        ("tool", "zzz", "wrong id"),
        ("tool", "a", "ok"),
        ("tool", "a", "duplicate"),
    )
    assert results(trace) == [("read", "ok")]


def test_legacy_function_results_pair_by_name_then_order():
    trace = build(
        ("user", "go"),
        ("assistant", [("", "read", "{}"), ("", "grep", "{}")]),
        ("function", "grep", "grep out"),
        ("tool", None, "read out"),
    )
    assert results(trace) == [("read", "read out"), ("grep", "grep out")]


def test_calls_without_results_are_missing():
    trace = build(("user", "go"), ("assistant", [("a", "read", "{}"), ("b", "grep", "{}")]), ("tool", "a", "ok"))
    assert [e.status for e in trace.events] == [Status.OK, Status.MISSING]
    assert trace.events[1].result_hash is None


def test_run_scope_starts_after_the_last_genuine_user_turn():
    turns = (
        ("user", "first"),
        ("assistant", [("a", "read", "{}")]),
        ("tool", "a", "1"),
        ("user", "second"),
        ("assistant", [("b", "read", "{}")]),
        ("tool", "b", "2"),
        ("user", f"{VETO_MARKER} that call was not run"),
        ("assistant", [("c", "grep", "{}")]),
    )
    trace = build(*turns)
    assert trace.run_start == 4 and [e.call_id for e in trace.events] == ["b", "c"]
    assert [e.step for e in trace.events] == [1, 2] and trace.rounds == 2
    whole = build(*turns, settings=TraceSettings(scope="conversation"))
    assert whole.run_start == 0 and [e.step for e in whole.events] == [1, 2, 3] and whole.rounds == 3


def test_no_user_turn_means_the_whole_conversation():
    assert run_start(convo(("system", "s"), ("assistant", [("a", "read", "{}")])).turns) == 0


def test_results_of_calls_before_the_run_are_ignored():
    trace = build(("user", "a"), ("assistant", [("a", "read", "{}")]), ("user", "b"), ("tool", "a", "late"))
    assert trace.events == ()


@pytest.mark.parametrize(
    ("text", "tools", "name", "expected"),
    [
        ("all good", None, "read", Status.OK),
        ("Error: file not found", None, "read", Status.ERROR),
        ("Traceback (most recent call last):\n  File x", None, "read", Status.ERROR),
        ("build finished\nexit code: 2", None, "bash", Status.ERROR),
        ('{"is_error": true, "content": "x"}', None, "read", Status.ERROR),
        ('{"exitCode": 1, "output": ""}', None, "exec", Status.ERROR),
        ('{"exitCode": 0, "output": "fine"}', None, "exec", Status.OK),
        ("Error: unknown tool 'frobnicate'", None, "frobnicate", Status.UNKNOWN_TOOL),
        ("Tool frobnicate not found", None, "frobnicate", Status.UNKNOWN_TOOL),
        ("Error: no such thing", {"read"}, "frobnicate", Status.UNKNOWN_TOOL),  # undeclared and failed
        ("it ran fine", {"read"}, "frobnicate", Status.OK),  # undeclared but the agent ran it
    ],
)
def test_status_classification(text, tools, name, expected):
    trace = build(("user", "go"), ("assistant", [("a", name, "{}")]), ("tool", "a", text), tools=tools)
    assert trace.events[0].status is expected
    assert trace.events[0].declared is (None if tools is None else name in tools)


def test_explicit_error_flag_beats_the_patterns():
    conv = Conversation(
        (
            Turn(0, "user", "go"),
            Turn(1, "assistant", "", (ToolCall("a", "read", "{}"),)),
            Turn(2, "tool", "Error: this is file content", tool_call_id="a", is_error=False),
        )
    )
    assert build_trace(conv, SETTINGS).events[0].status is Status.OK
    flagged = Conversation((*conv.turns[:2], Turn(2, "tool", "fine", tool_call_id="a", is_error=True)))
    assert build_trace(flagged, SETTINGS).events[0].status is Status.ERROR


def test_vetoed_results_are_marked():
    trace = build(
        ("user", "go"),
        ("assistant", [("a", "read", "{}")]),
        ("tool", "a", f"{VETO_MARKER} this call was not run: it repeats"),
    )
    event = trace.events[0]
    assert event.vetoed and event.status is Status.ERROR and not event.proposed


def test_canonical_arguments_and_hashes():
    trace = build(
        ("user", "go"),
        (
            "assistant",
            [
                ("a", "read", '{"b": 1, "a": {"y": 2, "x": 1}, "task_progress": "50%"}'),
                ("b", "read", '{"a":{"x":1,"y":2},"b":1}'),
                ("c", "read", "not json at all"),
            ],
        ),
    )
    first, second, third = trace.events
    assert first.args == '{"a":{"x":1,"y":2},"b":1}' and first.args_hash == second.args_hash
    assert third.args == "not json at all" and third.raw_args == "not json at all"


def test_polling_flag():
    trace = build(
        ("user", "go"),
        (
            "assistant",
            [
                ("a", "check_background_tasks", "{}"),
                ("b", "bash", '{"command": "sleep 30 && tail log"}'),
                ("c", "bash", '{"command": "ls"}'),
            ],
        ),
    )
    assert [e.polling for e in trace.events] == [True, True, False]


def test_proposed_events_continue_the_trace():
    trace = build(("user", "go"), ("assistant", [("a", "read", "{}")]), ("tool", "a", "ok"), tools={"read"})
    calls = (ToolCall("p1", "read", "{}"), ToolCall("p2", "ghost", "{}"))
    events = proposed_events(trace, calls, SETTINGS)
    assert [(e.step, e.round, e.proposed, e.status, e.result) for e in events] == [
        (2, 2, True, Status.MISSING, None),
        (3, 2, True, Status.MISSING, None),
    ]
    assert [e.declared for e in events] == [True, False]
    judged = trace.with_events(events)
    assert judged.rounds == 2 and judged.latest.call_id == "p2"
    # A stream's calls are made into events one at a time, the same events.
    assert proposed_events(trace, calls[:1], SETTINGS) + proposed_events(trace, calls[1:], SETTINGS, 1) == events


def test_with_events_keeps_every_other_field():
    """``Trace.with_events`` builds its trace field by field: a field added to Trace must be
    carried over there too, or the response path would judge without it."""
    import dataclasses

    trace = dataclasses.replace(
        build(("user", "go"), ("assistant", [("a", "read", "{}")]), ("tool", "a", "ok"), tools={"read"}),
        skipped=3,
        compacted_at=1,
        prior=("sentinel",),
    )
    judged = trace.with_events(())
    for field in dataclasses.fields(trace):
        assert getattr(judged, field.name) == getattr(trace, field.name), field.name


def test_horizon_bounds_the_materialized_events():
    turns = [("user", "go")]
    for i in range(100):
        turns += [("assistant", [(f"c{i}", "read", f'{{"n": {i}}}')]), ("tool", f"c{i}", f"out {i}")]
    trace = build(*turns, settings=TraceSettings(horizon=10))
    assert len(trace.events) == 10 and trace.skipped == 90 and trace.total_events == 100
    assert [e.step for e in trace.events] == list(range(91, 101)) and trace.rounds == 100
    assert proposed_events(trace, (ToolCall("p", "read", "{}"),), SETTINGS)[0].step == 101


def test_empty_conversation():
    trace = build_trace(Conversation(()), SETTINGS)
    assert trace.events == () and trace.latest is None and trace.rounds == 0


def _naive_repeats(trace: Trace, size: int, tool_only: bool) -> bool:
    window = trace.events[-size:]
    if len(window) < 2:
        return False
    latest = window[-1]
    return any(e.tool == latest.tool and (tool_only or e.args_hash == latest.args_hash) for e in window[:-1])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("12"), st.integers(1, 2)), min_size=1, max_size=30),
    st.sampled_from([SETTINGS, TraceSettings(horizon=5)]),
)
def test_the_call_index_grown_request_by_request_agrees_with_the_window(rounds, trace_settings):
    """Each request of a growing conversation adds its new calls to the previous request's index
    (``memo``), past several layers made one again and past the horizon: the same answers as
    scanning the window, for the trace and for a proposal judged on it."""
    turns: list[tuple] = [("user", "go")]
    memo: dict = {}
    for i, (tool, args, calls) in enumerate(rounds):
        ids = [f"c{i}_{k}" for k in range(calls)]
        turns.append(("assistant", [(id_, tool, f'{{"n": {args}}}') for id_ in ids]))
        turns += [("tool", id_, f"out {args}") for id_ in ids]
        conv = convo(*turns)
        trace = build_trace(
            Conversation(tuple(_SHARED.setdefault(t, t) for t in conv.turns), conv.tools), trace_settings, memo
        )
        proposal = trace.with_events(proposed_events(trace, (ToolCall("p", tool, f'{{"n": {args}}}'),), trace_settings))
        for judged in (trace, proposal):
            for size in (1, 2, 3, 5, 8, 40):
                for tool_only in (False, True):
                    assert judged.repeats(size, tool_only=tool_only) == _naive_repeats(judged, size, tool_only)


# The memo recognises a grown conversation by its turns' identity, as the history cache keeps them.
_SHARED: dict[Turn, Turn] = {}
