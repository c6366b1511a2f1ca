"""Claude Code on Amazon Bedrock through the gateway (``CLAUDE_CODE_USE_BEDROCK`` with
``ANTHROPIC_BEDROCK_BASE_URL`` at the gateway and ``CLAUDE_CODE_SKIP_BEDROCK_AUTH``): the gateway
signs every request with the AWS credentials in its own environment, the scripted Bedrock
runtime verifies each signature. A loop is ended within 8 executed calls with the model's own
answer; a healthy run runs every call untouched. Skipped where the CLI is not installed."""

from __future__ import annotations

import pytest
from support.bedrock_gateway import aws_env
from support.cli_runs import CALC, CHECK, DONE, FINAL, Scenario, check_ended, check_untouched, scripted
from support.clis import find_cli
from support.clis_claude_bedrock import run_claude_bedrock

pytestmark = pytest.mark.skipif(find_cli("claude") is None, reason="Claude Code is not installed")


def bash(command: str, description: str) -> tuple[str, dict[str, str]]:
    return "Bash", {"command": command, "description": description}


STUBBORN = Scenario(
    "stubborn", lambda turn: bash("cat x.txt", "Show x.txt"), {"x.txt": "x\n"}, prompt="What is in x.txt?"
)


def _edit_run_test(turn):
    calc = str(turn.work / "calc.py")
    return [
        ("Read", {"file_path": calc}),
        bash("python check_calc.py", "Run the checks"),
        ("Edit", {"file_path": calc, "old_string": "return a - b", "new_string": "return a + b"}),
        bash("python check_calc.py", "Run the checks again"),
        ("Edit", {"file_path": calc, "old_string": "return a ** b", "new_string": "return a * b"}),
        bash("python check_calc.py", "Run the checks once more"),
    ]


HEALTHY = Scenario("edit_run_test", scripted(_edit_run_test), {"calc.py": CALC, "check_calc.py": CHECK}, calls=6)


def test_a_claude_code_loop_on_bedrock_is_ended_by_the_signing_gateway(tmp_path, monkeypatch):
    aws_env(monkeypatch, tmp_path, credentials=True)  # the gateway's process environment
    outcome, cloud = run_claude_bedrock(STUBBORN, tmp_path)
    check_ended(outcome, FINAL, len(outcome.executed()), outcome.model.closed)
    assert cloud.requests and cloud.refused == [], outcome.story()  # every request signed right
    assert all(r["headers"]["authorization"].startswith("AWS4-HMAC-SHA256") for r in cloud.requests)


def test_a_healthy_claude_code_run_on_bedrock_runs_every_call(tmp_path, monkeypatch):
    aws_env(monkeypatch, tmp_path, credentials=True)
    outcome, cloud = run_claude_bedrock(HEALTHY, tmp_path)
    check_untouched(outcome, DONE, len(outcome.executed()), HEALTHY.calls, outcome.warned)
    assert cloud.refused == [], outcome.story()
