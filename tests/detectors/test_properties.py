"""Properties over arbitrary conversations: detectors never raise, are deterministic, ignore JSON
key order, and a different call between repeats breaks every consecutive pattern."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.detectors import (
    REGISTRY,
    CycleSettings,
    ErrorRepeatSettings,
    ExactRepeatSettings,
    NoProgressSettings,
    SimilarRepeatSettings,
    ToolRoundsSettings,
    UnknownToolSettings,
    similar,
)
from gateway.protocols.chat.parse import conversation_from_body, tool_calls_from_message
from gateway.trace.builder import build_trace, proposed_events
from gateway.trace.model import Trace
from gateway.trace.settings import TraceSettings

NAMES = ["read_file", "bash", "write", "check_background_tasks", "ghost", "grep"]
IDS = ["c1", "c2", "c3", "", None]
RESULTS = [
    "ok",
    "x = 1",
    "Error: boom",
    "Error: unknown tool ghost",
    "",
    "[loopguard] not run",
    '{"pid": 3, "out": "a"}',
    '{"pid": 4, "out": "a"}',
    "took 3s at 2024-01-01T00:00:00Z",
    "Traceback (most recent call last):\n  boom",
    "exit code 1",
]

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "b", "x y", "é", "sleep 5"])
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["path", "cmd", "task_progress", "n", "opts", "action"]), inner, max_size=4)
    ),
    max_leaves=8,
)
arguments = st.one_of(
    json_values.map(json.dumps),
    st.sampled_from(["", "{", "not json", "[1, 2", "{}", '{"a": 1, "a": 2}']),
    st.text(max_size=12),
    st.dictionaries(st.sampled_from(["path", "cmd"]), scalars, max_size=2),  # objects, not text
    st.integers(),
)
contents = st.one_of(
    st.sampled_from(RESULTS),
    st.text(max_size=20),
    st.lists(
        st.one_of(
            st.fixed_dictionaries({"type": st.just("text"), "text": st.sampled_from(RESULTS)}),
            st.just({"type": "image_url", "image_url": {"url": "x"}}),
            st.integers(),
        ),
        max_size=3,
    ),
    st.none(),
    st.integers(),
)
tool_call = st.fixed_dictionaries(
    {
        "id": st.sampled_from(IDS),
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": st.sampled_from(NAMES), "arguments": arguments}),
    }
)
messages = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "developer"]), "content": contents}),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": contents, "tool_calls": st.lists(tool_call, max_size=3)}
    ),
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": st.none(),
            "function_call": st.fixed_dictionaries({"name": st.sampled_from(NAMES), "arguments": arguments}),
        }
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": st.sampled_from(IDS), "content": contents}),
    st.fixed_dictionaries({"role": st.just("function"), "name": st.sampled_from(NAMES), "content": contents}),
    st.sampled_from(
        [
            None,
            3,
            "text",
            [],
            {},
            {"role": 5},
            {"role": "assistant", "tool_calls": "x"},
            {"role": "assistant", "tool_calls": [None, {"function": "x"}, {"function": {"name": 3}}]},
        ]
    ),
)
tools = st.one_of(
    st.none(),
    st.lists(st.sampled_from(NAMES[:4]), max_size=4).map(
        lambda names: [{"type": "function", "function": {"name": n}} for n in names]
    ),
)
# Loops: a few messages, then a block repeated 2-5 times (so every detector has work to do).
looped = st.tuples(st.lists(messages, max_size=8), st.lists(messages, min_size=1, max_size=4), st.integers(2, 5)).map(
    lambda parts: parts[0] + parts[1] * parts[2]
)
bodies = st.fixed_dictionaries({"messages": st.one_of(st.lists(messages, max_size=40), looped), "tools": tools})

# Defaults plus settings that switch on every option the defaults leave off.
VARIANTS = [
    {name: entry.settings() for name, entry in REGISTRY.items()},
    {
        "unknown_tool": UnknownToolSettings(consecutive=False, warn_at=1),
        "no_progress": NoProgressSettings(consecutive=True, window=5),
        "error_repeat": ErrorRepeatSettings(consecutive=False, window=4),
        "exact_repeat": ExactRepeatSettings(reset_on_progress=False, skip_polling=False, window=3),
        "similar_repeat": SimilarRepeatSettings(
            metric="jaccard3", min_length=5, results="any", consecutive=False, compare="latest", strict=True
        ),
        "cycle": CycleSettings(
            key="name", stable_results="cap", periods=(2, 3, 4, 5), window=9, warn_at=3, reject_at=4
        ),
        "tool_rounds": ToolRoundsSettings(warn_at=1),
    },
    {
        "similar_repeat": SimilarRepeatSettings(metric="levenshtein", min_similarity=0.5),
        "cycle": CycleSettings(key="args", stable_results="ignore", window=4),
    },
]
TRACE_SETTINGS = [TraceSettings(), TraceSettings(scope="conversation", horizon=7, scan_chars=64)]
HYPOTHESIS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def findings(trace: Trace, variant: dict) -> dict[str, Any]:
    return {name: REGISTRY[name].detect(trace, s) for name, s in variant.items()}


def traces(body: dict, trace_settings: TraceSettings) -> list[Trace]:
    """The request-path trace, and the same with the latest call proposed again."""
    trace = build_trace(conversation_from_body(body), trace_settings)
    out = [trace]
    if trace.latest is not None:
        last = body["messages"]
        calls = tool_calls_from_message(
            next((m for m in reversed(last) if isinstance(m, dict) and m.get("role") == "assistant"), {})
        )
        out.append(trace.with_events(proposed_events(trace, calls, trace_settings)))
    return out


@HYPOTHESIS
@given(bodies, st.sampled_from(TRACE_SETTINGS))
def test_detectors_never_raise_and_are_deterministic(body, trace_settings):
    built = traces(body, trace_settings)
    # From scratch: a copy of the body, new settings (so a fresh normalization memo).
    rebuilt = traces(json.loads(json.dumps(body)), TraceSettings(**trace_settings.model_dump()))
    assert len(built) == len(rebuilt)
    for first, second in zip(built, rebuilt):
        for variant in VARIANTS:
            assert findings(first, variant) == findings(second, variant) == findings(first, variant)


def reorder(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: reorder(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reorder(v) for v in value]
    return value


def reorder_arguments(body: dict) -> dict:
    out = []
    for message in body["messages"]:
        if isinstance(message, dict) and isinstance(message.get("tool_calls"), list):
            calls = []
            for call in message["tool_calls"]:
                if not (isinstance(call, dict) and isinstance(call.get("function"), dict)):
                    calls.append(call)
                    continue
                args = call["function"].get("arguments")
                try:
                    args = json.dumps(reorder(json.loads(args))) if isinstance(args, str) else reorder(args)
                except (ValueError, TypeError):
                    pass
                calls.append({**call, "function": {**call["function"], "arguments": args}})
            message = {**message, "tool_calls": calls}
        out.append(message)
    return {**body, "messages": out}


@HYPOTHESIS
@given(bodies)
def test_json_key_order_never_matters(body):
    plain = build_trace(conversation_from_body(body), TraceSettings())
    shuffled = build_trace(conversation_from_body(reorder_arguments(body)), TraceSettings())
    assert [e.args_hash for e in plain.events] == [e.args_hash for e in shuffled.events]
    for variant in VARIANTS:
        assert findings(plain, variant) == findings(shuffled, variant)


CONSECUTIVE = {
    "error_repeat": ErrorRepeatSettings(),
    "similar_repeat": SimilarRepeatSettings(results="any"),
    "exact_repeat": ExactRepeatSettings(
        consecutive=True, reset_on_progress=False, skip_polling=False, exempt_tools=frozenset()
    ),
    "no_progress": NoProgressSettings(consecutive=True),
    "unknown_tool": UnknownToolSettings(),
}


@HYPOTHESIS
@given(bodies, st.sampled_from(RESULTS), st.booleans())
def test_a_different_call_breaks_consecutive_patterns(body, result, propose_last):
    trace = build_trace(conversation_from_body(body), TraceSettings())
    if trace.latest is None:
        return
    last = trace.latest
    repeat = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "r1", "type": "function", "function": {"name": last.tool, "arguments": last.raw_args}}],
    }
    other = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "d1", "type": "function", "function": {"name": "zz_other", "arguments": "{}"}}],
    }
    extended = [
        *body["messages"],
        repeat,
        {"role": "tool", "tool_call_id": "r1", "content": result},
        other,
        {"role": "tool", "tool_call_id": "d1", "content": "done"},
    ]
    if propose_last:
        new = build_trace(conversation_from_body({**body, "messages": extended}), TraceSettings())
        new = new.with_events(proposed_events(new, tool_calls_from_message(repeat), TraceSettings()))
    else:
        extended += [repeat, {"role": "tool", "tool_call_id": "r1", "content": result}]
        new = build_trace(conversation_from_body({**body, "messages": extended}), TraceSettings())
    for name, s in CONSECUTIVE.items():
        finding = REGISTRY[name].detect(new, s)
        assert finding is None or finding.count == 1, (name, finding)


@HYPOTHESIS
@given(bodies)
def test_the_repeat_shortcuts_never_change_a_finding(body: dict) -> None:
    """Detectors answer at once when the latest call (or tool) occurs nowhere earlier in their
    window (``Trace.repeats``), and similar_repeat's consecutive chain when the call before it is
    of another tool: the same findings as walking the window in full."""
    for trace_settings in TRACE_SETTINGS:
        for trace in traces(body, trace_settings):
            for variant in VARIANTS:
                quick = findings(trace, variant)
                with (
                    patch.object(Trace, "repeats", lambda self, size, tool_only=False: bool(self.events)),
                    patch.object(similar, "_next_to_same_tool", lambda events: True),
                ):
                    full = findings(trace, variant)
                assert quick == full
