"""mini-SWE-agent (PyPI ``mini-swe-agent``) run headless through a real gateway.

The CLI lives in its own virtual environment (it pins its own litellm), at
``<prefix>/py/mini/bin/mini``; tests skip where it is absent. It is pointed at the gateway as an
OpenAI-compatible endpoint through litellm (``OPENAI_API_BASE``, model ``openai/<name>``), with
the cost map read from the package (``LITELLM_LOCAL_MODEL_COST_MAP``) so nothing leaves the
machine, and ``MSWEA_CONFIGURED`` so it never asks for a first-time setup. ``-y
--exit-immediately`` runs it unattended; the trajectory it writes (``-o``) is its own record of
what it executed.

Two modes: ``tool`` (the shipped ``mini.yaml``: one ``bash`` tool, non-streamed) and ``text``
(the shipped ``mini_textbased.yaml`` with the ``litellm_textbased`` model class: no tools, one
fenced block per reply, whose result comes back as the next user message). The shipped text
config fences its command as ```` ```mswea_bash_command ````; ``fence="bash"`` runs the same mode
with a plain ```` ```bash ```` fence (mini-SWE-agent 1.x's, still set by ``action_regex``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.clis import PREFIX
from support.upstream import Reply

MODEL = "test-model"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # the harness's own way to finish
SHIPPED_FENCE = "mswea_bash_command"
CLOSED_NOTE = "Tools are now closed"  # the gateway's answer-mode note, for a model without tools


def mini_cli() -> str | None:
    """The pinned ``mini`` executable, or None where it is not installed."""
    path = PREFIX / "py" / "mini" / "bin" / "mini"
    return str(path) if path.exists() else None


@dataclass(frozen=True)
class Mode:
    """How mini-SWE-agent acts: by tool call (``tool``) or in text (``text``, with its fence)."""

    name: str
    fence: str = SHIPPED_FENCE

    def act(self, command: str, thought: str = "Next step.") -> Reply:
        """The model's reply that runs ``command`` in this mode."""
        if self.name == "tool":
            return Reply(content=thought, tool_calls=[("bash", json.dumps({"command": command}))])
        return Reply(content=f"THOUGHT: {thought}\n\n```{self.fence}\n{command}\n```")

    def flags(self) -> list[str]:
        if self.name == "tool":
            return []
        out = ["-c", "mini_textbased.yaml", "--model-class", "litellm_textbased"]
        if self.fence != SHIPPED_FENCE:
            out += ["-c", f"model.action_regex=```{self.fence}\\s*\\n(.*?)\\n```"]
        return out


TOOL, TEXT = Mode("tool"), Mode("text")


def tools_closed(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer: tools closed the protocol's way, or (text mode has
    no tools to close) its answer note among the messages."""
    if body.get("tool_choice") == "none":
        return True
    return any(CLOSED_NOTE in str(m.get("content") or "") for m in body.get("messages", []))


def executed_results(body: dict[str, Any]) -> int:
    """The command results the model has seen: tool messages (tool mode), or user messages in
    the harness's observation shape (text mode)."""
    count = 0
    for message in body.get("messages", []):
        content = str(message.get("content") or "")
        if message.get("role") == "tool" or (message.get("role") == "user" and "<returncode>" in content):
            count += 1
    return count


def looping(mode: Mode, command: str, final: str, cap: int = 30) -> Callable[[dict], Reply]:
    """A model that runs ``command`` every time, whatever it sees, and writes ``final`` when the
    tools are closed. After ``cap`` results it submits, so a run the gateway never ends still
    stops by itself (and the test fails on its count)."""

    def respond(body: dict) -> Reply:
        if tools_closed(body):
            return Reply(content=final)
        if executed_results(body) >= cap:
            return mode.act(SUBMIT, "Giving up.")
        return mode.act(command, "Let me look at it again.")

    return respond


def sweeping(mode: Mode, commands: list[str]) -> Callable[[dict], Reply]:
    """A healthy model: each command once, in order, then it submits."""

    def respond(body: dict) -> Reply:
        done = executed_results(body)
        if tools_closed(body):
            return Reply(content="Stopped early.")
        if done >= len(commands):
            return mode.act(SUBMIT, "All done.")
        return mode.act(commands[done], f"Step {done + 1}.")

    return respond


@dataclass
class MiniRun:
    returncode: int
    stdout: str
    stderr: str
    trajectory: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.trajectory.get("messages", [])

    @property
    def executed(self) -> list[str]:
        """The commands the harness ran, from its own trajectory: each observation that is not
        the "action was not executed" filler."""
        out = []
        for message in self.messages:
            extra = message.get("extra") or {}
            if "raw_output" in extra and extra.get("exception_info") != "action was not executed":
                out.append(extra.get("raw_output", ""))
        return out

    def shows(self, text: str) -> bool:
        """``text`` reached the user: printed, or kept in the trajectory the CLI writes for them
        (mini-SWE-agent prints a reply without an action nowhere: it answers it with a nudge and
        files the reply under that nudge's ``extra.response``, where its inspector shows it)."""
        return text in self.stdout or text in json.dumps(self.trajectory)

    @property
    def exit_status(self) -> str:
        return self.trajectory.get("info", {}).get("exit_status", "")


def environment(gateway: str, root: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: the gateway as its only endpoint, no set-up prompt, no cost-map
    download; the caller's OpenAI/Anthropic settings never leak in."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "LITELLM_", "MSWEA_", "AZURE_"))
    }
    env.update(
        {
            "HOME": str(root / "home"),
            "MSWEA_CONFIGURED": "true",
            "MSWEA_GLOBAL_CONFIG_DIR": str(root / "mini-config"),
            "MSWEA_COST_TRACKING": "ignore_errors",  # a local model has no price
            "OPENAI_API_KEY": "sk-mini",
            "OPENAI_API_BASE": gateway + "/v1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
            "NO_COLOR": "1",
            **(extra or {}),
        }
    )
    return env


def run_mini(
    gateway: str,
    work: Path,
    root: Path,
    task: str,
    mode: Mode,
    extra_env: dict[str, str] | None = None,
    timeout: float = 180,
) -> MiniRun:
    """Run the pinned CLI once on ``task`` in ``work``, unattended, and read its trajectory."""
    cli = mini_cli()
    assert cli is not None
    trajectory = root / "trajectory.json"
    command = [
        cli,
        "-y",
        "--exit-immediately",
        "-m",
        f"openai/{MODEL}",
        "-t",
        task,
        "-o",
        str(trajectory),
        *mode.flags(),
    ]
    run = subprocess.run(
        command,
        cwd=work,
        env=environment(gateway, root, extra_env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    data = json.loads(trajectory.read_text()) if trajectory.exists() else {}
    return MiniRun(run.returncode, run.stdout, run.stderr, data)
