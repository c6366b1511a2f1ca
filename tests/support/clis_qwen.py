"""Qwen Code (``qwen -p ... --yolo``) through a real gateway in front of a scripted
OpenAI-compatible chat-completions upstream.

Qwen Code is a fork of Gemini CLI: it follows the same scripts (tests/support/clis_gemini.py)
spoken with its own vocabulary (``edit`` instead of ``replace``, ``offset``/``limit`` instead of
``start_line``/``end_line``). It always streams its agent turns. Its settings turn off telemetry,
update checks and the opt-in loop heuristics; its always-on guard (5 identical calls in a row)
cannot be turned off, so the healthy polls narrate each poll differently, as models do.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.cli_runs import ChatUpstream, text_of, tools_closed
from support.clis_gemini import (
    FINAL,
    GATEWAY_TEXT,
    VETO,
    Fork,
    Outcome,
    Scenario,
    Script,
    Seen,
    Vocabulary,
    finish_text,
    run_fork,
)
from support.upstream import Reply

QWEN = Vocabulary(edit="edit", one_based_range=False)
AGENT_MARKER = "You are Qwen Code"
MODEL = "qwen-loop-test"

QWEN_SETTINGS = {
    "security": {"auth": {"selectedType": "openai"}},
    "model": {"name": MODEL, "skipLoopDetection": True, "skipNextSpeakerCheck": True},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False},
    "ide": {"enabled": False},
    # Commands run in a pseudo-terminal, as Gemini CLI runs them by default. Qwen Code's other
    # path (a plain child process, its default for `-p`) takes a command's result when the process
    # exits, before its output is read: on a busy machine `cat status.txt` then reads as
    # "(empty)", a different result, and a loop looks like progress.
    "tools": {"shell": {"enableInteractiveShell": True}},
}


def chat_seen(body: dict[str, Any]) -> Seen:
    """The tool results (``role: tool`` messages) of a chat request, as text."""
    results = [text_of(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]
    executed = sum(1 for r in results if not r.lstrip().startswith(VETO))
    return Seen(results, executed, GATEWAY_TEXT in json.dumps(body).lower())


def is_agent(body: dict[str, Any]) -> bool:
    return any(
        m.get("role") == "system" and AGENT_MARKER in text_of(m.get("content")) for m in body.get("messages", [])
    )


def qwen_model(script: Script) -> Callable[[dict], Reply]:
    """The scripted model: the agent's requests follow the script; the gateway's tools-closed
    request gets ``FINAL``; any side request of the CLI a short answer."""

    def respond(body: dict) -> Reply:
        if not is_agent(body):
            return Reply(content='{"reasoning": "the task is done", "next_speaker": "user"}')
        if tools_closed(body):
            return Reply(content=FINAL)
        call = script(chat_seen(body))
        if call is None:
            return Reply(content=finish_text(script))
        return Reply(tool_calls=[(call[0], json.dumps(call[1]))])

    return respond


QWEN_CODE = Fork(
    "qwen",
    ".qwen",
    QWEN_SETTINGS,
    lambda script: ChatUpstream(qwen_model(script), MODEL),
    lambda url: {"base_url": url + "/v1"},
    lambda gateway: {
        "OPENAI_BASE_URL": gateway + "/v1",
        "OPENAI_API_KEY": "sk-qwen-test",
        "OPENAI_MODEL": MODEL,
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    },
    is_agent,
    chat_seen,
    tools_closed,
)


def run_qwen(scenario: Scenario, base: Path, vocabulary: Vocabulary = QWEN, policy: str | None = None) -> Outcome:
    """Run ``scenario`` with Qwen Code through a gateway (default policy unless ``policy``) to a
    scripted model."""
    return run_fork(QWEN_CODE, scenario, base, vocabulary, policy)
