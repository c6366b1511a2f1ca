"""Claude Code on Vertex AI (``CLAUDE_CODE_USE_VERTEX=1``) through a real gateway that holds the
Google credentials: the CLI skips its own auth (``CLAUDE_CODE_SKIP_VERTEX_AUTH=1``) and names
the gateway's ``/vertex/v1`` as its Vertex endpoint (``ANTHROPIC_VERTEX_BASE_URL``); the gateway
takes its access token from a service account (google-auth's default chain) whose token
endpoint is scripted, and the scripted Vertex upstream accepts that token only.

The scenarios and the scripted model are Claude Code's (:mod:`support.clis_claude`); only where
the CLI points and what the upstream checks differ."""

from __future__ import annotations

import os
import subprocess
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

from support.cli_runs import Outcome, Scenario, policy_file, read_audit, start_gateway, write_files
from support.clis import find_cli
from support.clis_claude import Model, calls_in, clean_env, own_results
from support.google_oauth import TokenServer
from support.servers import serve
from support.vertex_upstream import VertexUpstream

PROJECT, REGION = "proj", "us-east5"


def vertex_env(home: Path, gateway: str) -> dict[str, str]:
    """Claude Code's environment for Vertex through the gateway: no Anthropic key or URL."""
    env = {k: v for k, v in clean_env(home, gateway).items() if k not in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    return {
        **env,
        "CLAUDE_CODE_USE_VERTEX": "1",
        "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1",
        "ANTHROPIC_VERTEX_BASE_URL": gateway + "/vertex/v1",
        "ANTHROPIC_VERTEX_PROJECT_ID": PROJECT,
        "CLOUD_ML_REGION": REGION,
    }


def run_claude_vertex(
    scenario: Scenario, root: Path, timeout: float = 180, policy: str | None = None, streamed: bool = True
) -> tuple[Outcome, VertexUpstream, TokenServer]:
    """Run the scenario (see ``support.clis_claude.run_claude``); also returns the cloud and the
    gateway's token endpoint, for what they saw."""
    work, home, audit = write_files(root / "work", scenario.files), root / "home", root / "audit.jsonl"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    model = Model(scenario, work, streamed=streamed)
    tokens = TokenServer()
    cloud = VertexUpstream(claude=model, token="ya29.gateway-1")
    with ExitStack() as stack:
        tokens.url = stack.enter_context(serve(tokens.app))
        key_file = tokens.key_file(root)
        stack.enter_context(mock.patch.dict(os.environ, {"GOOGLE_APPLICATION_CREDENTIALS": str(key_file)}))
        url = stack.enter_context(serve(cloud.app))
        settings = {"vertex_base_url": url, "vertex_credentials": "gateway"}
        gateway = start_gateway(stack, settings, audit, policy_file(root, policy))
        command = [find_cli("claude") or "claude", "-p", scenario.prompt, "--dangerously-skip-permissions"]
        run = subprocess.run(
            [*command, "--output-format", "text"],
            cwd=work,
            env=vertex_env(home, gateway),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    received = [r["json"] for r in cloud.anthropic.requests if "RawPredict" in r["path"]]
    bodies = [b for b in received if b.get("stream") == streamed]  # not the broken streams
    outcome = Outcome(
        run.returncode, run.stdout, run.stderr, bodies, read_audit(audit, event=None), model, calls_in, own_results
    )
    return outcome, cloud, tokens
