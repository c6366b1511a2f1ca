"""Claude Code itself (``claude -p ... --dangerously-skip-permissions``) through a real gateway
(the shipped default policy) in front of a scripted Anthropic Messages model.

The CLI is pointed at the gateway with ``ANTHROPIC_BASE_URL`` and a dummy ``ANTHROPIC_API_KEY``;
every other provider, login and telemetry variable of the calling shell is dropped, and the
CLI's non-essential traffic (update checks, telemetry, error reports) is switched off, so it can
reach nothing but the gateway. It always streams its agent turns.

A scenario is a scripted model: ``step(turn)`` gives the next call (tool name, input) or None
when the model is done; the model answers ``FINAL`` whenever the gateway closes the tools
(``tool_choice`` none), ``DONE`` when its script ends, and a loop nobody ends gives up with
``GAVE_UP`` after ``LIMIT`` calls.
What ran is read back from what the upstream received: every tool_result the CLI wrote (not
the gateway's own observations)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.anthropic_upstream import AnthropicUpstream, Said
from support.clis import find_cli
from support.servers import serve

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.policy.loader import shipped_policy_path
from gateway.server.app import SERVER_OPTIONS, build_app

FINAL = "FINAL ANSWER: I was going round in circles, so I stopped and report what I found."
DONE = "DONE: the task is complete."
GAVE_UP = "GAVE UP: the script ran out of calls."
LIMIT = 20  # a loop nobody stops gives up after this many calls: a failure, found fast
# Claude Code always streams, and asks again without streaming when a stream breaks: a model that
# breaks every stream has every turn of the run answered non-streamed.
BROKEN = b"event: message_start\ndata: {not json\n\n"
MARK = "[loopguard"  # every gateway text starts so, in any letter case
# The calling shell's own model client must not leak into the CLI: it would reach a provider.
_DROPPED = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "AWS_", "GOOGLE_", "VERTEX_", "HTTP_PROXY", "HTTPS_PROXY",
            "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1", "IS_SANDBOX": "1", "CI": "1",
}
# Whatever a CLI still tries to reach besides the gateway goes to a closed port and fails at once.
NOWHERE = "http://127.0.0.1:9"
PROXIES = {"HTTPS_PROXY": NOWHERE, "HTTP_PROXY": NOWHERE, "https_proxy": NOWHERE, "http_proxy": NOWHERE,
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


@dataclass
class Turn:
    """What the scripted model knows when it picks its next call."""

    index: int  # calls proposed so far in this run
    results: list[str]  # the CLI's own tool results in this request, oldest first
    warned: bool  # a gateway text has reached the model at some point of the run
    work: Path

    @property
    def last(self) -> str:
        return self.results[-1] if self.results else ""


Step = Callable[[Turn], "tuple[str, dict[str, Any]] | None"]
Counted = Callable[[str, dict[str, Any]], bool]  # (tool name, input) -> is the call part of the pattern


@dataclass
class Scenario:
    """One scripted run: its prompt, its model, the files it starts from, and which executed
    calls belong to the pattern (``counted``; a loop's set-up call, such as the Read an Edit
    needs first, is not part of it)."""

    name: str
    step: Step
    files: dict[str, str] = field(default_factory=dict)
    calls: int = 0  # healthy: how many calls the script makes
    counted: Counted = lambda name, args: True
    prompt: str = "Please get the tests in this folder passing."


@dataclass
class Model:
    """The scripted model behind the gateway: answers the CLI's agent turns from the scenario."""

    scenario: Scenario
    work: Path
    streamed: bool = True
    proposed: int = 0
    warned: bool = False
    closed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Said:
        if body.get("stream") and not self.streamed:
            return Said(raw_stream=BROKEN)  # the CLI asks again without streaming
        with self.lock:
            return self._respond(body)

    def _respond(self, body: dict[str, Any]) -> Said:
        self.warned = self.warned or MARK in json.dumps(body).lower()
        if tools_closed(body):
            self.closed += 1
            return self._answer(FINAL)
        if "Bash" not in {t.get("name") for t in body.get("tools") or []}:
            return Said(text="OK")  # a side request of the CLI (none expected: traffic is off)
        if ends_with_notification(body):
            return Said(text=DONE)  # a background job ended after the answer: nothing to add
        call = self.scenario.step(Turn(self.proposed, results_in(body), self.warned, self.work))
        if call is None:
            return self._answer(DONE)
        if not self.scenario.calls and self.proposed >= LIMIT:  # a loop's script never ends
            return self._answer(GAVE_UP)
        self.proposed += 1
        return Said(calls=[call])

    def _answer(self, text: str) -> Said:
        """The model's last word; it also tells a background job of the run to stop (the job
        watches for ``.stop``), so the CLI has no running job to wait for."""
        (self.work / ".stop").touch()
        return Said(text=text)


def tools_closed(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer with ``tool_choice: none`` (or no tools)."""
    choice = body.get("tool_choice")
    return not body.get("tools") or (isinstance(choice, dict) and choice.get("type") == "none")


def ends_with_notification(body: dict[str, Any]) -> bool:
    """The CLI's own "background task finished" message, sent after the run's answer."""
    last = body["messages"][-1]
    return last["role"] == "user" and "<task-notification>" in json.dumps(last["content"]) and \
        not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"])


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def own_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_use id -> result text of every call the CLI ran (the gateway's observations left out)."""
    out: dict[str, str] = {}
    for message in body.get("messages", []):
        for block in message["content"] if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = result_text(block)
                if not text.lstrip().lower().startswith(MARK):
                    out[block["tool_use_id"]] = text
    return out


def results_in(body: dict[str, Any]) -> list[str]:
    return list(own_results(body).values())


def calls_in(body: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """tool_use id -> (name, input) of every call the model proposed in this conversation."""
    return {block["id"]: (block["name"], block.get("input") or {})
            for message in body.get("messages", []) if message["role"] == "assistant"
            for block in (message["content"] if isinstance(message["content"], list) else [])
            if isinstance(block, dict) and block.get("type") == "tool_use"}


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    bodies: list[dict[str, Any]]
    audit: list[dict[str, Any]]
    model: Model

    def executed(self, counted: Counted | None = None) -> list[tuple[str, dict[str, Any], str]]:
        """(name, input, result) of each call the CLI ran, in order, over the whole run."""
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        results: dict[str, str] = {}
        for body in self.bodies:
            calls.update(calls_in(body))
            results.update(own_results(body))
        ran = [(*calls[i], text) for i, text in results.items() if i in calls]
        return [r for r in ran if counted is None or counted(r[0], r[1])]

    def executed_at_first_warning(self, counted: Counted | None = None) -> int | None:
        """How many calls had run when a gateway text first reached the model (None: never)."""
        for body in self.bodies:
            if MARK in json.dumps(body).lower():
                calls = calls_in(body)
                return sum(1 for i in own_results(body) if i in calls and (counted is None or counted(*calls[i])))
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
        lines = [f"exit {self.returncode}; {len(self.bodies)} upstream requests; "
                 f"{self.model.proposed} calls proposed; tools closed {self.model.closed} times"]
        lines += [f"  ran {name} {json.dumps(args)[:120]} -> {text[:100]!r}" for name, args, text in self.executed()]
        lines += [f"  gateway {e.get('action')} by {e.get('detector')} on {e.get('tool')}" for e in self.audit]
        lines += [f"stdout: {self.stdout[-600:]!r}", f"stderr: {self.stderr[-600:]!r}"]
        return "\n".join(lines)


def clean_env(home: Path, gateway: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    return {**env, **QUIET, **PROXIES, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": gateway, "ANTHROPIC_API_KEY": "sk-ant-dummy"}


def prepare(scenario: Scenario, root: Path) -> tuple[Path, Path]:
    work, home = root / "work", root / "home"
    for name, text in scenario.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    work.mkdir(parents=True, exist_ok=True)
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    return work, home


def policy_file(root: Path, text: str | None) -> Path:
    if text is None:
        return shipped_policy_path("default")
    (root / "policy.yaml").write_text(text)
    return root / "policy.yaml"


def error_mode_policy() -> str:
    """The shipped default policy with ``interventions.terminate.mode: error``."""
    text = shipped_policy_path("default").read_text()
    changed = text.replace("    mode: answer ", "    mode: error  ", 1)
    assert changed != text
    return changed


def run_claude(scenario: Scenario, root: Path, timeout: float = 180, policy: str | None = None,
               streamed: bool = True) -> Outcome:
    """Run the scenario through a gateway with the shipped default policy (or the policy text
    ``policy``), every turn streamed or (``streamed=False``) every turn answered non-streamed;
    returns what happened."""
    work, home = prepare(scenario, root)
    model = Model(scenario, work, streamed)
    upstream = AnthropicUpstream(model)
    audit = root / "audit.jsonl"
    with serve(upstream.app) as upstream_url:
        config = Config.model_validate({"upstream": {"base_url": "http://127.0.0.1:9/v1",  # never reached
                                                     "anthropic_base_url": upstream_url},
                                        "audit": {"jsonl_path": str(audit)}})
        app = build_app(config, policies=PolicyHolder(policy_file(root, policy)))
        with serve(app, **SERVER_OPTIONS) as gateway:
            command = [find_cli("claude") or "claude", "-p", scenario.prompt, "--dangerously-skip-permissions",
                       "--output-format", "text"]
            run = subprocess.run(command, cwd=work, env=clean_env(home, gateway), capture_output=True,
                                 text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []
    received = [r["json"] for r in upstream.requests if r["path"] == "/v1/messages"]
    bodies = [b for b in received if b.get("stream") == streamed]  # not the broken streams
    return Outcome(run.returncode, run.stdout, run.stderr, bodies, events, model)
