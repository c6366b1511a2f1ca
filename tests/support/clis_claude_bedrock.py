"""Claude Code on Amazon Bedrock through a real gateway that holds the AWS credentials.

The CLI runs as an operator sets it up for a gateway: ``CLAUDE_CODE_USE_BEDROCK=1``,
``ANTHROPIC_BEDROCK_BASE_URL`` at the gateway's ``/bedrock``, ``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1``
(it signs nothing) and a region; the calling shell's AWS and Anthropic settings are dropped
(``clean_env``). The gateway finds the scripted credentials in its own process environment
(botocore's chain) and signs every request; the scripted Bedrock runtime verifies each signature
and answers the turns from the scenario, as ``clis_claude`` does on the Anthropic API.
"""

from __future__ import annotations

import subprocess
from contextlib import ExitStack
from pathlib import Path

from support.bedrock_upstream import MODEL, BedrockUpstream
from support.cli_runs import Outcome, Scenario, policy_file, read_audit, start_gateway, write_files
from support.clis import find_cli
from support.clis_claude import Model, calls_in, clean_env, own_results
from support.servers import serve
from support.sigv4_check import REGION


def bedrock_env(home: Path, gateway: str) -> dict[str, str]:
    env = {k: v for k, v in clean_env(home, gateway).items() if k not in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    return {
        **env,
        "CLAUDE_CODE_USE_BEDROCK": "1",
        "ANTHROPIC_BEDROCK_BASE_URL": gateway + "/bedrock",
        "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1",
        "AWS_REGION": REGION,
        "ANTHROPIC_MODEL": MODEL,
        "ANTHROPIC_SMALL_FAST_MODEL": MODEL,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": MODEL,
    }


def run_claude_bedrock(scenario: Scenario, root: Path, timeout: float = 180) -> tuple[Outcome, BedrockUpstream]:
    """Run the scenario through a gateway with the shipped default policy; returns what
    happened and the scripted cloud (what it received and refused)."""
    work, home, audit = write_files(root / "work", scenario.files), root / "home", root / "audit.jsonl"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    model = Model(scenario, work)
    upstream = BedrockUpstream(model)
    with ExitStack() as stack:
        url = stack.enter_context(serve(upstream.app))
        gateway = start_gateway(stack, {"bedrock_base_url": url}, audit, policy_file(root, None))
        command = [
            find_cli("claude") or "claude",
            "-p",
            scenario.prompt,
            "--dangerously-skip-permissions",
            "--output-format",
            "text",
        ]
        run = subprocess.run(
            command,
            cwd=work,
            env=bedrock_env(home, gateway),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    bodies = [r["json"] for r in upstream.requests if "json" in r]
    outcome = Outcome(
        run.returncode, run.stdout, run.stderr, bodies, read_audit(audit, event=None), model, calls_in, own_results
    )
    return outcome, upstream
