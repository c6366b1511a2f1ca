"""Aider (PyPI ``aider-chat``) run headless through a real gateway.

Aider lives in its own virtual environment (it pins its own litellm), at
``<prefix>/py/aider/bin/aider``; tests skip where it is absent. It reaches the gateway as an
OpenAI-compatible endpoint through litellm (``OPENAI_API_BASE``, model ``openai/<name>``), with
the cost map read from the package (``LITELLM_LOCAL_MODEL_COST_MAP``), no git, no analytics, no
update or model-list checks. Aider acts in text: each reply carries SEARCH/REPLACE blocks, which
it applies itself; a block that does not match is answered with its own user message
("# 1 SEARCH/REPLACE block failed to match! ## SearchReplaceNoExactMatch ..."), and it retries at
most three times per user message. The user's messages come from standard input, one a line
(the chat without a terminal), so a user who keeps saying "try again" is a list of lines.
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
CLOSED_NOTE = "Tools are now closed"  # the gateway's answer-mode note
NO_MATCH = "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in"
SUMMARIZE = "*Briefly* summarize this partial conversation"  # Aider's history summarizer
# What Aider would otherwise download (litellm's model price list) on its first model look-up.
METADATA = {
    "max_input_tokens": 128000,
    "max_output_tokens": 4096,
    "max_tokens": 4096,
    "input_cost_per_token": 0.0,
    "output_cost_per_token": 0.0,
    "litellm_provider": "openai",
    "mode": "chat",
}


def aider_cli() -> str | None:
    """The pinned ``aider`` executable, or None where it is not installed."""
    path = PREFIX / "py" / "aider" / "bin" / "aider"
    return str(path) if path.exists() else None


def edit(path: str, search: str, replace: str, intro: str = "Here is the change.") -> str:
    """One reply with one SEARCH/REPLACE block, in Aider's ``diff`` edit format."""
    return f"{intro}\n\n{path}\n```python\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```\n"


def answer_asked(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer (Aider declares no tools: the note says so)."""
    return any(CLOSED_NOTE in str(m.get("content") or "") for m in body.get("messages", []))


def last_user(body: dict[str, Any]) -> str:
    users = [str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


def summarizing(body: dict[str, Any]) -> bool:
    """Aider's own side request: a summary of the older chat history."""
    return any(SUMMARIZE in str(m.get("content") or "") for m in body.get("messages", [])[:1])


def refused_edit(path: str, search: str, replace: str, final: str) -> Callable[[dict], Reply]:
    """A model that sends the same edit, whose SEARCH text is not in the file, every time."""

    def respond(body: dict) -> Reply:
        if summarizing(body):
            return Reply(content="The user asked for an edit that did not apply.")
        if answer_asked(body):
            return Reply(content=final)
        return Reply(content=edit(path, search, replace, "I will update it."))

    return respond


def numbered_edits(path: str) -> Callable[[dict], Reply]:
    """A healthy model: the user's "set vN" gets the edit of line ``vN = 0`` to ``vN = N``."""

    def respond(body: dict) -> Reply:
        if summarizing(body):
            return Reply(content="The user asked for numbered edits; each applied.")
        text = last_user(body)
        marker = "please set v"
        if marker not in text:
            return Reply(content="Ok.")
        number = text.split(marker, 1)[1].split()[0].strip(".")
        return Reply(content=edit(path, f"v{number} = 0", f"v{number} = {number}", f"Setting v{number}."))

    return respond


@dataclass
class AiderRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def refusals(self) -> int:
        """Edits Aider tried to apply and could not: one "no exact match" report each."""
        return self.stdout.count(NO_MATCH)


def environment(gateway: str, root: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "LITELLM_", "AIDER_", "AZURE_"))
    }
    home = root / "home"
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True, exist_ok=True)
    # A fresh price list in Aider's cache: it never fetches one.
    (caches / "model_prices_and_context_window.json").write_text(json.dumps({MODEL: METADATA}))
    env.update(
        {
            "HOME": str(home),
            "OPENAI_API_KEY": "sk-aider",
            "OPENAI_API_BASE": gateway + "/v1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
            "NO_COLOR": "1",
        }
    )
    return env


def run_aider(
    gateway: str,
    work: Path,
    root: Path,
    messages: list[str],
    files: list[str],
    stream: bool = True,
    timeout: float = 180,
) -> AiderRun:
    """Aider in ``work`` with ``files`` in the chat; the user's ``messages`` typed one by one;
    replies streamed (Aider's default) or not."""
    cli = aider_cli()
    assert cli is not None
    metadata = root / "model-metadata.json"
    metadata.write_text(json.dumps({f"openai/{MODEL}": METADATA}))
    command = [
        cli,
        "--model",
        f"openai/{MODEL}",
        "--model-metadata-file",
        str(metadata),
        "--edit-format",
        "diff",
        "--no-git",
        "--yes-always",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-model-warnings",
        "--no-show-release-notes",
        "--no-pretty",
        "--no-fancy-input",
        "--stream" if stream else "--no-stream",
        "--no-auto-lint",
        "--no-detect-urls",
        "--map-tokens",
        "0",
        *files,
    ]
    run = subprocess.run(
        command,
        cwd=work,
        env=environment(gateway, root),
        input="\n".join(messages) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return AiderRun(run.returncode, run.stdout, run.stderr)
