"""``loopguard check``: valid and invalid policies and configs, exit codes, key paths."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

import pytest
import yaml
from support.process import ROOT, child_env

from gateway.check import run_check
from gateway.policy.loader import shipped_policy_names, shipped_policy_path

AGENTS_POLICY = """\
version: 1
name: fleet
detectors:
  no_progress: {warn_at: 3, reject_at: 5, terminate_at: 8}
agents:
  - id: nightly
    match: {header: nightly-bot, model: "gpt-4o*"}
    max_action: warn
    detectors:
      no_progress: {warn_at: 6}
"""


def loopguard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gateway", "check", *args],
        env=child_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def check(path, fmt: str = "yaml") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_check(str(path), fmt, out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", shipped_policy_names())
def test_every_shipped_pack_is_valid(name):
    code, out, err = check(shipped_policy_path(name))
    assert code == 0, err
    doc = yaml.safe_load(out)
    assert doc["agents"][0]["agent"] == "(default)" and "no_progress" in doc["agents"][0]["detectors"]


def test_effective_policy_per_agent_after_merging(tmp_path):
    policy = tmp_path / "fleet.yaml"
    policy.write_text(AGENTS_POLICY)
    code, out, err = check(policy)
    assert code == 0 and f"policy {policy}" in err
    default, nightly = yaml.safe_load(out)["agents"]
    assert (default["agent"], default["max_action"]) == ("(default)", "terminate")
    assert nightly["agent"] == "nightly"
    assert nightly["match"] == {"header": "nightly-bot", "model": "gpt-4o*"}  # as written, a glob
    assert nightly["max_action"] == "warn"
    # warn_at merged over the global block; reject/terminate corrected to stay in order.
    ladder = nightly["detectors"]["no_progress"]
    assert ladder["warn_at"] == 6 and ladder["reject_at"] > 6 and ladder["terminate_at"] > ladder["reject_at"]
    assert default["detectors"]["no_progress"]["warn_at"] == 3
    # Untouched detectors are inherited as they are.
    assert nightly["detectors"]["cycle"] == default["detectors"]["cycle"]


def test_json_output(tmp_path):
    policy = tmp_path / "fleet.yaml"
    policy.write_text(AGENTS_POLICY)
    code, out, _ = check(policy, "json")
    assert code == 0
    assert [a["agent"] for a in json.loads(out)["agents"]] == ["(default)", "nightly"]


def test_config_is_checked_with_the_policy_it_points_to(tmp_path):
    (tmp_path / "fleet.yaml").write_text(AGENTS_POLICY)
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "upstream:\n  base_url: http://127.0.0.1:9/v1\npolicy: fleet.yaml\naudit:\n  jsonl_path: /tmp/audit.jsonl\n"
    )
    code, out, err = check(config)
    assert code == 0 and f"config {config}" in err
    assert yaml.safe_load(out)["policy"] == "fleet"


def test_config_without_a_policy_uses_the_shipped_default(tmp_path):
    config = tmp_path / "gateway.yaml"
    config.write_text("server:\n  port: 9000\n")
    code, out, _ = check(config)
    assert code == 0 and yaml.safe_load(out)["policy"] == "default"


def test_invalid_policy_exits_1_naming_file_and_key_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        textwrap.dedent("""\
        version: 1
        agents:
          - match: {header: a}
            detectors:
              cycle: {bogus: 1}
        """)
    )
    result = loopguard(str(bad))
    assert result.returncode == 1 and result.stdout == ""
    assert f"{bad}: agents[0].detectors.cycle.bogus: unknown key" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_threshold_names_the_detector_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ndetectors:\n  no_progress: {warn_at: often}\n")
    code, _, err = check(bad)
    assert code == 1 and f"{bad}: detectors.no_progress.warn_at:" in err


def test_invalid_config_exits_1_naming_file_and_key_path(tmp_path):
    bad = tmp_path / "gateway.yaml"
    bad.write_text("audit:\n  webhook:\n    url: hooks.example/x\n")
    result = loopguard(str(bad))
    assert result.returncode == 1
    assert f"{bad}: audit.webhook.url" in result.stderr


def test_config_pointing_to_a_broken_policy_names_the_policy_file(tmp_path):
    (tmp_path / "broken.yaml").write_text("version: 1\nmode: loud\n")
    config = tmp_path / "gateway.yaml"
    config.write_text("policy: broken.yaml\n")
    code, _, err = check(config)
    assert code == 1 and "broken.yaml: mode:" in err


def test_missing_file_and_bad_yaml_exit_1(tmp_path):
    assert check(tmp_path / "absent.yaml")[0] == 1
    bad = tmp_path / "syntax.yaml"
    bad.write_text("version: 1\ndetectors: [unclosed\n")
    code, _, err = check(bad)
    assert code == 1 and str(bad) in err


def test_threshold_corrections_are_reported_on_stderr_not_in_the_output(tmp_path):
    policy = tmp_path / "order.yaml"
    policy.write_text("version: 1\nallow_reorder: true\ndetectors:\n  no_progress: {warn_at: 9, reject_at: 4}\n")
    result = loopguard(str(policy))
    assert result.returncode == 0
    assert "thresholds_reordered" in result.stderr
    yaml.safe_load(result.stdout)  # stdout is clean YAML


def test_non_positive_and_out_of_order_thresholds_are_all_reported_as_errors(tmp_path):
    policy = tmp_path / "bad.yaml"
    policy.write_text(
        "version: 1\ndetectors:\n  no_progress: {warn_at: 8, reject_at: 5, terminate_at: 3}\n"
        "  error_repeat: {warn_at: 0}\n  unknown_tool: {warn_at: -1}\n"
    )
    code, out, err = check(policy)
    assert code == 1 and out == ""
    for where in (
        "detectors.no_progress.warn_at: thresholds must increase",
        "detectors.error_repeat.warn_at",
        "detectors.unknown_tool.warn_at",
    ):
        assert where in err, err
    policy.write_text(
        "version: 1\nagents:\n  - match: {header: a}\n    detectors: {exact_repeat: {warn_at: 0}}\n"
        "  - match: {header: b}\n    detectors: {cycle: {warn_at: 9, reject_at: 2}}\n"
    )
    code, _, err = check(policy)
    assert code == 1
    assert "agents[0].detectors.exact_repeat.warn_at" in err and "agents[1].detectors.cycle.warn_at" in err


def test_a_policy_without_version_is_named_a_policy_missing_it(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\ndetectors:\n  no_progress: {warn_at: 2}\n")
    code, _, err = check(path)
    assert code == 1
    assert err.startswith(f"loopguard: invalid policy: {path}: version:") and "version: 1" in err
    assert "Extra inputs" not in err  # not read as a gateway config with unknown keys


def test_the_readme_examples_work_from_a_clone():
    for args in (["policies/warn-only.yaml"], ["config.example.yaml"]):
        assert loopguard(*args).returncode == 0, args
