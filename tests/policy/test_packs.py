"""The shipped packs: each loads cleanly against the real detectors and does what its comments
say on real traces (built by the real trace builder)."""

from __future__ import annotations

import json

import pytest
import yaml
from structlog.testing import capture_logs

from gateway.detectors import REGISTRY
from gateway.policy import (
    Action,
    load_policy,
    load_shipped_policy,
    shipped_policy_names,
    shipped_policy_path,
)
from gateway.policy.loader import SHIPPED_DIRS
from gateway.trace.builder import build_trace
from gateway.trace.model import Conversation, ToolCall, Turn
from gateway.trace.settings import TraceSettings

PACKS = ("default", "shadow", "warn-only", "strict", "openclaw", "weclaw")


def test_every_pack_is_shipped():
    assert set(PACKS) <= set(shipped_policy_names())


@pytest.mark.parametrize("name", PACKS)
def test_pack_loads_without_corrections_or_warnings(name):
    with capture_logs() as logs:
        policy = load_shipped_policy(name)
    assert policy.name == name
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []


def test_default_pack_equals_the_detectors_shipped_defaults():
    """default.yaml spells the defaults out for operators; this keeps file and code in step:
    every registered detector, every one of its fields, in priority order, with equal values."""
    raw = yaml.safe_load(shipped_policy_path("default").read_text(encoding="utf-8"))
    assert list(raw["detectors"]) == list(REGISTRY)
    for name, detector in REGISTRY.items():
        assert set(raw["detectors"][name]) == set(detector.settings.model_fields), name
    eff = load_shipped_policy("default").resolve()
    assert dict(eff.detector_settings) == {name: d.settings() for name, d in REGISTRY.items()}
    assert eff.trace_settings.model_dump() == TraceSettings().model_dump()


@pytest.mark.parametrize("name", ["shadow", "warn-only"])
def test_rollout_packs_judge_exactly_like_default(name):
    default, pack = load_shipped_policy("default").resolve(), load_shipped_policy(name).resolve()
    assert dict(pack.detector_settings) == dict(default.detector_settings)
    assert pack.trace_settings.model_dump() == default.trace_settings.model_dump()


def test_the_package_folder_is_searched_first():
    assert shipped_policy_path("default").parent == SHIPPED_DIRS[0]
    assert load_policy(SHIPPED_DIRS[1] / "default.yaml").name == "default"


def conversation(*steps: tuple[str, dict, str]) -> Conversation:
    turns = [Turn(0, "user", "do the task")]
    for n, (tool, args, result) in enumerate(steps, start=1):
        call = ToolCall(f"call_{n}", tool, json.dumps(args))
        turns.append(Turn(len(turns), "assistant", "", (call,)))
        turns.append(Turn(len(turns), "tool", result, tool_call_id=call.id))
    return Conversation(tuple(turns))


def judge(pack: str, *steps: tuple[str, dict, str]):
    eff = load_shipped_policy(pack).resolve()
    return eff.judge(build_trace(conversation(*steps), eff.trace_settings))


DENIED = ("write_file", {"path": "config.toml", "content": "x"}, "Error: permission denied")


@pytest.mark.parametrize(
    ("pack", "ladder"),
    [
        # (pack, {repeats: expected applied action}) for a file.write failing with permission denied
        ("default", {2: "pass", 3: "warn", 5: "reject", 8: "terminate"}),
        ("weclaw", {2: "pass", 3: "warn", 4: "reject", 5: "terminate"}),
        ("strict", {1: "pass", 2: "warn", 3: "reject", 5: "terminate"}),
        ("openclaw", {9: "pass", 10: "warn", 20: "reject", 30: "terminate"}),
        ("warn-only", {3: "warn", 5: "warn", 8: "warn"}),
        ("shadow", {3: "pass", 8: "pass"}),
    ],
)
def test_the_ladder_of_each_pack_on_a_repeated_failure(pack, ladder):
    for repeats, expected in ladder.items():
        judgement = judge(pack, *[DENIED] * repeats)
        assert judgement.action.label == expected, (pack, repeats, judgement)


@pytest.mark.parametrize("pack", ["shadow", "warn-only"])
def test_rollout_packs_still_report_what_they_would_do(pack):
    assert judge(pack, *[DENIED] * 8).would is Action.TERMINATE


@pytest.mark.parametrize("pack", PACKS)
def test_paginated_reads_stay_quiet_in_every_pack(pack):
    pages = [
        ("read_file", {"path": "big.log", "offset": 100 * i, "limit": 100}, f"lines {100 * i}..") for i in range(12)
    ]
    assert judge(pack, *pages).would is Action.PASS


def test_strict_caps_tool_rounds_at_15():
    reads = [("read_file", {"path": f"src/{i}.py"}, f"content {i}") for i in range(16)]
    assert judge("strict", *reads[:12]).action is Action.PASS
    assert judge("strict", *reads[:13]).action is Action.WARN
    assert judge("strict", *reads[:15]).action is Action.WARN
    assert judge("strict", *reads[:16]).action is Action.TERMINATE


def test_openclaw_and_weclaw_interventions():
    openclaw = load_shipped_policy("openclaw").resolve()
    assert openclaw.interventions.warn.placement == "tool_result"
    assert openclaw.interventions.reject.max_reasks == 1
    weclaw = load_shipped_policy("weclaw").resolve()
    assert weclaw.messages.language == "zh"
    assert "循环告警" in weclaw.render("warn", judge("weclaw", *[DENIED] * 3).finding)


def test_command_line_check(capsys, tmp_path):
    from gateway.policy.__main__ import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmode: loud\n", encoding="utf-8")
    assert main([str(SHIPPED_DIRS[1] / "weclaw.yaml")]) == 0
    assert "policy 'weclaw'" in capsys.readouterr().out
    assert main([str(bad)]) == 1
    assert f"{bad}: mode: Input should be 'enforce' or 'shadow'" in capsys.readouterr().err
    assert main([]) == 2
