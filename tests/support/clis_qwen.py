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
import subprocess
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from support.clis import find_cli
from support.clis_gemini import (FINAL, GATEWAY_TEXT, VETO, Outcome, Scenario, Script, Seen, Vocabulary,
                                 finish_text, gateway_config, read_audit, start_gateway, tool_env)
from support.servers import serve
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
}


class ChatUpstream:
    """A scripted chat-completions model answering each request from ``responder``, streamed
    or not as asked; it records every request body."""

    def __init__(self, responder: Callable[[dict], Reply]) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"]),
                                     Route("/v1/models", self._models, methods=["GET"])])

    async def _chat(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append({"json": body, "headers": dict(request.headers)})
        reply, model = self.responder(body), body.get("model", MODEL)
        if not body.get("stream"):
            return Response(orjson.dumps(reply.completion(model)), media_type="application/json")

        async def events():
            for chunk in reply.chunks(model):
                yield b"data: " + orjson.dumps(chunk) + b"\n\n"
            yield b"data: [DONE]\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    async def _models(self, request: Request) -> Response:
        return Response(orjson.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}),
                        media_type="application/json")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def chat_seen(body: dict[str, Any]) -> Seen:
    """The tool results (``role: tool`` messages) of a chat request, as text."""
    results = [_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]
    executed = sum(1 for r in results if not r.lstrip().startswith(VETO))
    return Seen(results, executed, GATEWAY_TEXT in json.dumps(body).lower())


def is_agent(body: dict[str, Any]) -> bool:
    return any(m.get("role") == "system" and AGENT_MARKER in _text(m.get("content"))
               for m in body.get("messages", []))


def chat_closed(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer with tools closed: none declared or ``none`` chosen."""
    return not body.get("tools") or body.get("tool_choice") == "none"


def qwen_model(script: Script) -> Callable[[dict], Reply]:
    """The scripted model: the agent's requests follow the script; the gateway's tools-closed
    request gets ``FINAL``; any side request of the CLI a short answer."""
    def respond(body: dict) -> Reply:
        if not is_agent(body):
            return Reply(content='{"reasoning": "the task is done", "next_speaker": "user"}')
        if chat_closed(body):
            return Reply(content=FINAL)
        call = script(chat_seen(body))
        if call is None:
            return Reply(content=finish_text(script))
        return Reply(tool_calls=[(call[0], json.dumps(call[1]))])
    return respond


def run_qwen(scenario: Scenario, base: Path, vocabulary: Vocabulary = QWEN) -> Outcome:
    """Run ``scenario`` with Qwen Code through a gateway (default policy) to a scripted model."""
    work, home, audit = base / "work", base / "home", base / "audit.jsonl"
    work.mkdir(parents=True)
    scenario.prepare(work)
    (home / ".qwen").mkdir(parents=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(QWEN_SETTINGS))
    upstream = ChatUpstream(qwen_model(scenario.script(work, vocabulary)))
    with ExitStack() as stack:
        url = stack.enter_context(serve(upstream.app))
        gateway = start_gateway(stack, gateway_config(audit, {"base_url": url + "/v1"}))
        env = {**tool_env(home), "OPENAI_BASE_URL": gateway + "/v1", "OPENAI_API_KEY": "sk-qwen-test",
               "OPENAI_MODEL": MODEL, "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
        run = subprocess.run([find_cli("qwen") or "qwen", "-p", scenario.prompt, "--yolo"], cwd=work,
                             env=env, capture_output=True, text=True, timeout=180)
    agent = [r["json"] for r in upstream.requests if is_agent(r["json"])]
    return Outcome(run.returncode, run.stdout, run.stderr, [chat_seen(b) for b in agent],
                   sum(1 for b in agent if chat_closed(b)), read_audit(audit))
