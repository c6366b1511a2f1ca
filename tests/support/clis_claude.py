"""Claude Code itself (``claude -p ... --dangerously-skip-permissions``) through a real gateway
(the shipped default policy) in front of a scripted Anthropic Messages model.

The CLI is pointed at the gateway with ``ANTHROPIC_BASE_URL`` and a dummy ``ANTHROPIC_API_KEY``;
every other provider, login and telemetry variable of the calling shell is dropped, and the
CLI's non-essential traffic (update checks, telemetry, error reports) is switched off, so it can
reach nothing but the gateway. It always streams its agent turns.

The scenarios are turn scripts (:mod:`support.cli_runs`), spoken here in Anthropic's shapes.
What ran is read back from what the upstream received: every tool_result the CLI wrote (not
the gateway's own observations)."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.anthropic_upstream import AnthropicUpstream, Said
from support.cli_runs import (
    DONE,
    MARK,
    PROXIES,
    Outcome,
    Scenario,
    TurnModel,
    policy_file,
    read_audit,
    start_gateway,
    text_of,
    write_files,
)
from support.clis import find_cli
from support.servers import serve

# Claude Code always streams, and asks again without streaming when a stream breaks: a model that
# breaks every stream has every turn of the run answered non-streamed.
BROKEN = b"event: message_start\ndata: {not json\n\n"
# The calling shell's own model client must not leak into the CLI: it would reach a provider.
_DROPPED = (
    "ANTHROPIC_",
    "CLAUDE_",
    "OPENAI_",
    "CODEX_",
    "AWS_",
    "GOOGLE_",
    "VERTEX_",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
)
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "IS_SANDBOX": "1",
    "CI": "1",
}


@dataclass
class Model(TurnModel):
    """The scripted model behind the gateway: answers the CLI's agent turns from the scenario."""

    streamed: bool = True

    def __call__(self, body: dict[str, Any]) -> Said:
        if body.get("stream") and not self.streamed:
            return Said(raw_stream=BROKEN)  # the CLI asks again without streaming
        with self.lock:
            return self._respond(body)

    def _respond(self, body: dict[str, Any]) -> Said:
        final = self.closing(body, tools_closed(body))
        if final is not None:
            return Said(text=final)
        if "Bash" not in {t.get("name") for t in body.get("tools") or []}:
            return Said(text="OK")  # a side request of the CLI (none expected: traffic is off)
        if ends_with_notification(body):
            return Said(text=DONE)  # a background job ended after the answer: nothing to add
        move = self.propose(list(own_results(body).values()))
        return Said(text=move) if isinstance(move, str) else Said(calls=[move])


def tools_closed(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer with ``tool_choice: none`` (or no tools)."""
    choice = body.get("tool_choice")
    return not body.get("tools") or (isinstance(choice, dict) and choice.get("type") == "none")


def ends_with_notification(body: dict[str, Any]) -> bool:
    """The CLI's own "background task finished" message, sent after the run's answer."""
    last = body["messages"][-1]
    return (
        last["role"] == "user"
        and "<task-notification>" in json.dumps(last["content"])
        and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"])
    )


def own_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_use id -> result text of every call the CLI ran (the gateway's observations left out)."""
    out: dict[str, str] = {}
    for message in body.get("messages", []):
        for block in message["content"] if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = text_of(block.get("content"))
                if not text.lstrip().lower().startswith(MARK):
                    out[block["tool_use_id"]] = text
    return out


def calls_in(body: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """tool_use id -> (name, input) of every call the model proposed in this conversation."""
    return {
        block["id"]: (block["name"], block.get("input") or {})
        for message in body.get("messages", [])
        if message["role"] == "assistant"
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if isinstance(block, dict) and block.get("type") == "tool_use"
    }


def clean_env(home: Path, gateway: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    return {
        **env,
        **QUIET,
        **PROXIES,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": gateway,
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
    }


def run_claude(
    scenario: Scenario, root: Path, timeout: float = 180, policy: str | None = None, streamed: bool = True
) -> Outcome:
    """Run the scenario through a gateway with the shipped default policy (or the policy text
    ``policy``), every turn streamed or (``streamed=False``) every turn answered non-streamed;
    returns what happened."""
    work, home, audit = write_files(root / "work", scenario.files), root / "home", root / "audit.jsonl"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    model = Model(scenario, work, streamed=streamed)
    upstream = AnthropicUpstream(model)
    with ExitStack() as stack:
        url = stack.enter_context(serve(upstream.app))
        gateway = start_gateway(stack, {"anthropic_base_url": url}, audit, policy_file(root, policy))
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
            env=clean_env(home, gateway),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    received = [r["json"] for r in upstream.requests if r["path"] == "/v1/messages"]
    bodies = [b for b in received if b.get("stream") == streamed]  # not the broken streams
    return Outcome(
        run.returncode, run.stdout, run.stderr, bodies, read_audit(audit, event=None), model, calls_in, own_results
    )
