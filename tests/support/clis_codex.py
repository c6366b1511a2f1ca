"""Codex CLI itself (``codex exec``, full auto, no sandbox) through a real gateway (the shipped
default policy) in front of a scripted OpenAI Responses model.

The CLI is pointed at the gateway by a model provider of its own in ``$CODEX_HOME/config.toml``
(``base_url`` = the gateway's ``/v1``, ``wire_api = "responses"``, the key read from an env var
of our own); every provider and login variable of the calling shell is dropped, and update
checks, analytics, OpenTelemetry and history are switched off, so it reaches nothing but the
gateway. It always streams, with ``store: false`` (the whole conversation in every request).

Scenarios are the ones of :mod:`support.clis_claude` (a ``step(turn)`` scripted model); a call is
("exec_command", {"cmd": ...}), ("write_stdin", {...}) or ("apply_patch", "<patch text>"), the
last one sent as the freeform (custom) tool call Codex declares it as."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.clis import find_cli
from support.clis_claude import (DONE, FINAL, GAVE_UP, LIMIT, MARK, PROXIES, Scenario, Turn,  # noqa: F401 - shared
                                 error_mode_policy, policy_file)
from support.responses_upstream import Answer, ResponsesUpstream
from support.responses_wire import custom_call
from support.servers import serve

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app

MODEL = "gpt-5.5"  # a model Codex knows: it then declares apply_patch as a freeform tool
KEY_VAR = "LOOPGUARD_CODEX_KEY"
CUSTOM_TOOLS = ("apply_patch",)
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
_DROPPED = ("OPENAI_", "CODEX_", "ANTHROPIC_", "AZURE_OPENAI", "CLAUDE_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
            "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")


@dataclass
class Reply(Answer):
    """An answer whose one call may be a freeform (custom) tool call: ``apply_patch``."""

    custom: tuple[str, str] | None = None

    def output(self) -> list[dict[str, Any]]:
        if self.custom is None:
            return super().output()
        name, text = self.custom
        return [custom_call(name, text, f"call_{id(self):x}")]


def config_toml(gateway: str) -> str:
    """The CLI's config: our provider, no approvals, no sandbox, nothing sent anywhere else.
    ``allow_login_shell = false``: commands run in a plain ``bash -c`` that keeps our PATH."""
    return f"""model = "{MODEL}"
model_provider = "loopguard"
approval_policy = "never"
sandbox_mode = "danger-full-access"
allow_login_shell = false
check_for_update_on_startup = false

[model_providers.loopguard]
name = "LoopGuard"
base_url = "{gateway}/v1"
wire_api = "responses"
env_key = "{KEY_VAR}"

[analytics]
enabled = false

[history]
persistence = "none"
"""


def tools_closed(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer with ``tool_choice: "none"`` (or no tools)."""
    return not body.get("tools") or body.get("tool_choice") == "none"


def output_text(item: dict[str, Any]) -> str:
    out = item.get("output")
    if isinstance(out, list):
        return "\n".join(p.get("text", "") for p in out if isinstance(p, dict))
    return out if isinstance(out, str) else json.dumps(out)


def own_results(items: list[dict[str, Any]]) -> dict[str, str]:
    """call_id -> output text of every call the CLI ran (the gateway's observations left out)."""
    return {i["call_id"]: output_text(i) for i in items
            if isinstance(i, dict) and i.get("type") in OUTPUTS
            and not output_text(i).lstrip().lower().startswith(MARK)}


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
class Model:
    """The scripted model behind the gateway: answers the CLI's agent turns from the scenario."""

    scenario: Scenario
    work: Path
    proposed: int = 0
    warned: bool = False
    closed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, conversation: list[dict[str, Any]], body: dict[str, Any]) -> Answer:
        with self.lock:
            return self._respond(conversation, body)

    def _respond(self, conversation: list[dict[str, Any]], body: dict[str, Any]) -> Answer:
        self.warned = self.warned or MARK in json.dumps(body).lower()
        if tools_closed(body):
            self.closed += 1
            return self._answer(FINAL)
        if "exec_command" not in {t.get("name") for t in body.get("tools") or []}:
            return Answer("OK")  # a side request of the CLI (none seen: it makes none)
        call = self.scenario.step(Turn(self.proposed, list(own_results(conversation).values()), self.warned,
                                       self.work))
        if call is None:
            return self._answer(DONE)
        if not self.scenario.calls and self.proposed >= LIMIT:  # a loop's script never ends
            return self._answer(GAVE_UP)
        self.proposed += 1
        name, args = call
        if name in CUSTOM_TOOLS:
            return Reply(custom=(name, args))
        return Reply(calls=[(name, json.dumps(args))])

    def _answer(self, text: str) -> Answer:
        """The model's last word; a background job of the run watches for ``.stop`` and ends."""
        (self.work / ".stop").touch()
        return Answer(text)


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    inputs: list[list[dict[str, Any]]]  # the input items of each upstream request
    audit: list[dict[str, Any]]
    model: Model

    def executed(self, counted=None) -> list[tuple[str, Any, str]]:
        """(name, arguments, output) of each call the CLI ran, in order, over the whole run."""
        calls: dict[str, tuple[str, Any]] = {}
        results: dict[str, str] = {}
        for items in self.inputs:
            calls.update(calls_in(items))
            results.update(own_results(items))
        ran = [(*calls[i], text) for i, text in results.items() if i in calls]
        return [r for r in ran if counted is None or counted(r[0], r[1])]

    def executed_at_first_warning(self, counted=None) -> int | None:
        """How many calls had run when a gateway text first reached the model (None: never)."""
        for items in self.inputs:
            if MARK in json.dumps(items).lower():
                calls = calls_in(items)
                return sum(1 for i in own_results(items) if i in calls and (counted is None or counted(*calls[i])))
        return None

    @property
    def warned(self) -> bool:
        return self.model.warned

    @property
    def ended_requests(self) -> int:
        """Client requests the gateway ended (terminate): more than one is the client retrying."""
        return len({e.get("request_id") for e in self.audit if e.get("action") == "terminate"})

    def story(self) -> str:
        """What happened, for an assertion message: the calls, the gateway's actions, the ends."""
        lines = [f"exit {self.returncode}; {len(self.inputs)} upstream requests; "
                 f"{self.model.proposed} calls proposed; tools closed {self.model.closed} times"]
        lines += [f"  ran {name} {json.dumps(args)[:120]} -> {text[-100:]!r}" for name, args, text in self.executed()]
        lines += [f"  gateway {e.get('action')} by {e.get('detector')} on {e.get('tool')}" for e in self.audit]
        lines += [f"stdout: {self.stdout[-600:]!r}", f"stderr: {self.stderr[-600:]!r}"]
        return "\n".join(lines)


def clean_env(home: Path, codex_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    return {**env, **PROXIES, "HOME": str(home), "CODEX_HOME": str(codex_home), KEY_VAR: "sk-dummy", "NO_COLOR": "1"}


def prepare(scenario: Scenario, root: Path) -> tuple[Path, Path, Path]:
    work, home = root / "work", root / "home"
    for name, text in scenario.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    work.mkdir(parents=True, exist_ok=True)
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    return work, home, codex_home


def run_codex(scenario: Scenario, root: Path, timeout: float = 180, policy: str | None = None) -> Outcome:
    """Run the scenario through a gateway with the shipped default policy (or the policy text
    ``policy``); returns what happened."""
    work, home, codex_home = prepare(scenario, root)
    model = Model(scenario, work)
    upstream = ResponsesUpstream(model)
    audit = root / "audit.jsonl"
    with serve(upstream.app) as upstream_url:
        config = Config.model_validate({"upstream": {"base_url": upstream_url + "/v1"},
                                        "audit": {"jsonl_path": str(audit)}})
        app = build_app(config, policies=PolicyHolder(policy_file(root, policy)))
        with serve(app, **SERVER_OPTIONS) as gateway:
            (codex_home / "config.toml").write_text(config_toml(gateway))
            command = [find_cli("codex") or "codex", "exec", "--skip-git-repo-check", "--ephemeral",
                       "--strict-config", "--color", "never", "-C", str(work), scenario.prompt]
            run = subprocess.run(command, cwd=work, env=clean_env(home, codex_home), capture_output=True,
                                 text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []
    inputs = [r["json"]["input"] for r in upstream.requests if r["path"] == "/v1/responses" and r["json"]]
    return Outcome(run.returncode, run.stdout, run.stderr, inputs, events, model)

