"""Codex CLI itself (``codex exec``, full auto, no sandbox) through a real gateway (the shipped
default policy) in front of a scripted OpenAI Responses model.

The CLI is pointed at the gateway by a model provider of its own in ``$CODEX_HOME/config.toml``
(``base_url`` = the gateway's ``/v1``, ``wire_api = "responses"``, the key read from an env var
of our own), or, with ``azure``, by an Azure provider (``base_url`` = the gateway's ``/openai``,
``query_params = { api-version = ... }``) whose model the gateway relays to a scripted Azure
resource (``support.azure_upstream``); every provider and login variable of the calling shell is dropped, and update
checks, analytics, OpenTelemetry and history are switched off, so it reaches nothing but the
gateway. It always streams, with ``store: false`` (the whole conversation in every request).

The scenarios are turn scripts (:mod:`support.cli_runs`), as Claude Code's; a call is
("exec_command", {"cmd": ...}), ("write_stdin", {...}) or ("apply_patch", "<patch text>"), the
last one sent as the freeform (custom) tool call Codex declares it as."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.azure_upstream import API_VERSION, AzureUpstream
from support.cli_runs import (
    MARK,
    PROXIES,
    Outcome,
    Scenario,
    TurnModel,
    policy_file,
    read_audit,
    start_gateway,
    text_of,
    tools_closed,
    write_files,
)
from support.clis import find_cli
from support.responses_upstream import Answer, ResponsesUpstream
from support.responses_wire import custom_call
from support.servers import serve

MODEL = "gpt-5.5"  # a model Codex knows: it then declares apply_patch as a freeform tool
KEY_VAR = "LOOPGUARD_CODEX_KEY"
KEY = "sk-dummy"  # its value
CUSTOM_TOOLS = ("apply_patch",)
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
_DROPPED = (
    "OPENAI_",
    "CODEX_",
    "ANTHROPIC_",
    "AZURE_OPENAI",
    "CLAUDE_",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
)


@dataclass
class Reply(Answer):
    """An answer whose one call may be a freeform (custom) tool call: ``apply_patch``."""

    custom: tuple[str, str] | None = None

    def output(self) -> list[dict[str, Any]]:
        if self.custom is None:
            return super().output()
        name, text = self.custom
        return [custom_call(name, text, f"call_{id(self):x}")]


def provider_toml(gateway: str, azure: bool) -> str:
    """The model provider: the gateway's OpenAI routes, or its Azure ones as Codex's Azure
    provider is configured for a resource (the resource's ``/openai`` and its ``api-version``)."""
    if azure:
        return f"""[model_providers.azure]
name = "Azure"
base_url = "{gateway}/openai"
query_params = {{ api-version = "{API_VERSION}" }}
wire_api = "responses"
env_key = "{KEY_VAR}"
"""
    return f"""[model_providers.loopguard]
name = "LoopGuard"
base_url = "{gateway}/v1"
wire_api = "responses"
env_key = "{KEY_VAR}"
"""


def config_toml(gateway: str, azure: bool = False) -> str:
    """The CLI's config: our provider, no approvals, no sandbox, nothing sent anywhere else.
    ``allow_login_shell = false``: commands run in a plain ``bash -c`` that keeps our PATH."""
    return f"""model = "{MODEL}"
model_provider = "{"azure" if azure else "loopguard"}"
approval_policy = "never"
sandbox_mode = "danger-full-access"
allow_login_shell = false
check_for_update_on_startup = false

{provider_toml(gateway, azure)}
[analytics]
enabled = false

[history]
persistence = "none"
"""


def output_text(item: dict[str, Any]) -> str:
    out = item.get("output")
    return text_of(out) if isinstance(out, (list, str)) else json.dumps(out)


def own_results(items: list[dict[str, Any]]) -> dict[str, str]:
    """call_id -> output text of every call the CLI ran (the gateway's observations left out)."""
    return {
        i["call_id"]: output_text(i)
        for i in items
        if isinstance(i, dict) and i.get("type") in OUTPUTS and not output_text(i).lstrip().lower().startswith(MARK)
    }


def calls_in(items: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """call_id -> (name, arguments as a dict, or the freeform input text)."""
    out: dict[str, tuple[str, Any]] = {}
    for item in items:
        if isinstance(item, dict) and item.get("type") in CALLS:
            raw = item.get("arguments") if item["type"] == "function_call" else item.get("input")
            try:
                args = json.loads(raw) if item["type"] == "function_call" else raw
            except (TypeError, ValueError):
                args = raw
            out[item["call_id"]] = (item["name"], args)
    return out


@dataclass
class Model(TurnModel):
    """The scripted model behind the gateway: answers the CLI's agent turns from the scenario."""

    def __call__(self, conversation: list[dict[str, Any]], body: dict[str, Any]) -> Answer:
        with self.lock:
            return self._respond(conversation, body)

    def _respond(self, conversation: list[dict[str, Any]], body: dict[str, Any]) -> Answer:
        final = self.closing(body, tools_closed(body))
        if final is not None:
            return Answer(final)
        if "exec_command" not in {t.get("name") for t in body.get("tools") or []}:
            return Answer("OK")  # a side request of the CLI (none seen: it makes none)
        move = self.propose(list(own_results(conversation).values()))
        if isinstance(move, str):
            return Answer(move)
        name, args = move
        if name in CUSTOM_TOOLS:
            return Reply(custom=(name, args))
        return Reply(calls=[(name, json.dumps(args))])


def clean_env(home: Path, codex_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    return {**env, **PROXIES, "HOME": str(home), "CODEX_HOME": str(codex_home), KEY_VAR: KEY, "NO_COLOR": "1"}


def run_codex(
    scenario: Scenario,
    root: Path,
    timeout: float = 180,
    policy: str | None = None,
    azure: bool = False,
    ephemeral: bool = True,
) -> Outcome:
    """Run the scenario through a gateway with the shipped default policy (or the policy text
    ``policy``), on the OpenAI routes or (``azure``) the Azure ones; returns what happened.
    ``ephemeral=False``: the CLI also writes its session rollout under ``$CODEX_HOME/sessions``
    (the replay fixtures are made so)."""
    work, home, audit = write_files(root / "work", scenario.files), root / "home", root / "audit.jsonl"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    model = Model(scenario, work)
    azure_resource = AzureUpstream(None, model, (KEY,), deployment=MODEL) if azure else None
    upstream = azure_resource.responses if azure_resource else ResponsesUpstream(model)
    with ExitStack() as stack:
        url = stack.enter_context(serve(azure_resource.app if azure_resource else upstream.app))
        settings = {"azure_base_url": url} if azure else {"base_url": url + "/v1"}
        gateway = start_gateway(stack, settings, audit, policy_file(root, policy))
        (codex_home / "config.toml").write_text(config_toml(gateway, azure))
        command = [
            find_cli("codex") or "codex",
            "exec",
            "--skip-git-repo-check",
            *(["--ephemeral"] if ephemeral else []),
            "--strict-config",
            "--color",
            "never",
            "-C",
            str(work),
            scenario.prompt,
        ]
        run = subprocess.run(
            command,
            cwd=work,
            env=clean_env(home, codex_home),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    inputs = [r["json"]["input"] for r in upstream.requests if r["path"].endswith("/responses") and r["json"]]
    return Outcome(
        run.returncode,
        run.stdout,
        run.stderr,
        inputs,
        read_audit(audit, event=None),
        model,
        calls_in,
        own_results,
        shown=(-100, None),
    )
