"""Intervention texts: shipped en/zh templates, overrides, the veto marker, safe rendering."""

from __future__ import annotations

from dataclasses import replace

import pytest
from policy_fakes import make_trace

from gateway.detectors.base import Finding
from gateway.policy import REJECT_MARKER
from gateway.policy.messages import PLACEHOLDERS, check_template, compact_steps, compile_messages
from gateway.policy.texts import SHIPPED, SPECIAL

LOOP = Finding("exact_repeat", 4, (3, 4, 5, 6), ("write_file",), "Same call 4 times.")
CYCLE = Finding("cycle", 3, (1, 2, 3, 4, 5, 6), ("edit", "test", "edit"), "edit <-> test")
ROUNDS = Finding("tool_rounds", 15, tuple(range(1, 16)), ("ls",), "15 rounds")


@pytest.fixture
def en(compile_policy):
    return compile_policy("").resolve()


@pytest.fixture
def zh(compile_policy):
    return compile_policy("messages: {language: zh}\n").resolve()


def test_warn_names_tool_pattern_count_steps_and_what_to_do(en):
    text = en.render("warn", LOOP)
    for part in (
        "`write_file`",
        "4 times",
        "exact repeat",
        "steps 3-6",
        "Same call 4 times.",
        "change the arguments or the approach",
        "report what you have and finish",
    ):
        assert part in text
    assert ".." not in text  # the description's own full stop is not doubled


def test_reject_starts_with_the_marker_in_every_language_and_variant(en, zh):
    for policy in (en, zh):
        for finding in (LOOP, CYCLE, ROUNDS, None):
            assert policy.render("reject", finding).startswith(REJECT_MARKER)
    assert REJECT_MARKER == "[loopguard]"


def test_terminate_says_stopped_which_loop_how_many_and_progress(en):
    trace = make_trace("read", "write_file", "write_file", "write_file")
    text = en.render("terminate", LOOP, progress=en.progress(trace))
    assert "stopped" in text and "exact repeat" in text and "4 times" in text
    assert "4 tool calls over 4 rounds (write_file ×3, read ×1)" in text


def test_cycle_names_each_tool_once(en):
    assert "`edit, test`" in en.render("warn", CYCLE)


def test_tool_rounds_has_its_own_wording(en, zh):
    assert "15 model-tool round trips" in en.render("warn", ROUNDS)
    assert "15 次模型-工具往返" in zh.render("warn", ROUNDS)


def test_chinese_templates(zh):
    warn = zh.render("warn", LOOP)
    assert "循环告警" in warn and "精确重复" in warn and "`write_file`" in warn and "4 次" in warn
    assert "请停止当前操作模式" in warn
    terminate = zh.render("terminate", LOOP, progress=zh.progress(make_trace("a", "a")))
    assert "任务因检测到持续循环而终止" in terminate and "2 轮共 2 次工具调用" in terminate


def test_operator_override_with_literal_braces(compile_policy):
    template = "[loopguard] LOOP {{json}} {detector} x{count} on {tool}"
    eff = compile_policy(f"messages:\n  warn: '{template}'\n").resolve()
    assert eff.render("warn", LOOP) == "[loopguard] LOOP {json} exact_repeat x4 on write_file"
    # an override replaces the tool_rounds variant too: the operator's words win
    assert eff.render("warn", ROUNDS) == "[loopguard] LOOP {json} tool_rounds x15 on ls"


def test_rendering_never_raises(en):
    assert "[LoopGuard]" in en.render("terminate", None)  # every placeholder renders empty
    assert en.render("warn", LOOP, progress=None, unknown=object())
    assert en.render("nonsense", LOOP) == "[LoopGuard] Loop detected."  # type: ignore[arg-type]
    broken = Finding("x", 1, (), (), None)  # type: ignore[arg-type]  description not a str
    assert en.render("reject", broken).startswith(REJECT_MARKER)


def test_extra_values_override_finding_values(en):
    assert "`shell.exec`" in en.render("warn", LOOP, tool="shell.exec")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_shipped_template_compiles_with_known_placeholders(language):
    texts = list(SHIPPED[language].values()) + list(SPECIAL[language].values())
    for text in texts:
        fields = {f for _, f in check_template(text).pieces if f}
        assert fields <= PLACEHOLDERS
    assert set(compile_messages(language, {}).templates) == {"warn", "reject", "reask", "terminate", "answer"}


@pytest.mark.parametrize(
    ("steps", "text"),
    [
        ((), ""),
        ((4,), "4"),
        ((1, 2, 3), "1-3"),
        ((5, 1, 2, 3, 9, 10), "1-3, 5, 9-10"),
    ],
)
def test_compact_steps(steps, text):
    assert compact_steps(steps) == text


def test_progress_counts_executed_calls_only(en):
    trace = make_trace("a", "b")
    vetoed = replace(trace.events[-1], step=3, vetoed=True)
    assert en.progress(trace.with_events((vetoed,))) == "2 tool calls over 3 rounds (a ×1, b ×1)"
    assert en.progress(make_trace()) == "no tool calls were executed"


@pytest.mark.parametrize(
    ("skipped", "language", "expected"),
    [
        (0, "en", "2 tool calls over 2 rounds (read ×2)"),
        (40, "en", "42 tool calls over 2 rounds (read ×2, +40 earlier)"),
        (40, "zh", "2 轮共 42 次工具调用"),
    ],
)
def test_progress_counts_calls_before_the_horizon(skipped, language, expected):
    from gateway.policy.messages import summarize_progress

    trace = replace(make_trace("read", "read"), skipped=skipped)
    assert summarize_progress(trace, language).startswith(expected)
