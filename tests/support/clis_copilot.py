"""GitHub Copilot CLI through a real gateway, and the scripted chat-completions model it (and Cline,
tests/support/clis_cline.py) talks to.

Copilot CLI runs headless as ``copilot -p PROMPT --allow-all-tools`` with its "bring your own key"
provider pointed at the gateway (``COPILOT_PROVIDER_BASE_URL``; ``COPILOT_OFFLINE=true`` so it
never reaches GitHub: no login, telemetry or update check). It speaks chat completions, streamed
unless ``--stream off``. Its shell tool ``bash`` ends every result with
``<shellId: N completed with exit code C>``, N one higher each call.

The scripted model is a *step* function: given how many of its calls ran and their results, the
next call ``(tool, args)`` or None when it is done. The model answers ``FINAL`` whenever the
gateway closes the tools (``tool_choice: none``), ``DONE`` when its script ends.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from support.clis import find_cli
from support.servers import serve
from support.upstream import Reply

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.policy.loader import shipped_policy_path
from gateway.server.app import SERVER_OPTIONS, build_app

FINAL = "FINAL ANSWER: the same step kept coming back, so I stopped here."
DONE = "DONE: every step of the plan ran."
LOOPGUARD = "[LoopGuard"  # how the gateway's warnings and notes to the model begin
VETO = "[loopguard]"  # how the observation of a call the gateway refused begins

Call = tuple[str, dict[str, Any]]
Step = Callable[[int, list[str]], Call | None]


def tools_closed(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer with the tools closed (``tool_choice: none``)."""
    return body.get("tool_choice") == "none" or not body.get("tools")


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def results(body: dict[str, Any]) -> list[str]:
    """The tool results of the conversation that really ran: a refused call's observation (the
    gateway's, not the agent's) is left out."""
    found = [text_of(m) for m in body.get("messages", []) if m.get("role") == "tool"]
    return [text for text in found if not text.startswith(VETO)]


def warned(body: dict[str, Any]) -> bool:
    """A LoopGuard text (warning or note) reached the model in this request."""
    return any(LOOPGUARD in text_of(m) for m in body.get("messages", []))


def responder(step: Step) -> Callable[[dict[str, Any]], Reply]:
    """The looping model: the script's next call, ``FINAL`` once the tools are closed, ``DONE``
    when the script ends."""
    def respond(body: dict[str, Any]) -> Reply:
        if tools_closed(body):
            return Reply(content=FINAL)
        seen = results(body)
        call = step(len(seen), seen)
        if call is None:
            return Reply(content=DONE)
        name, args = call
        return Reply(tool_calls=[(name, json.dumps(args))])
    return respond


class ChatModel:
    """A scripted OpenAI chat-completions upstream answering each request from a responder;
    every request it receives is recorded (path, headers, JSON body)."""

    def __init__(self, respond: Callable[[dict[str, Any]], Reply]) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ])

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["json"] for r in self.requests]

    def executed(self) -> list[str]:
        """The results of the calls the agent ran, from the longest conversation seen."""
        return max((results(b) for b in self.bodies), key=len, default=[])

    def warned(self) -> bool:
        return any(warned(b) for b in self.bodies)

    async def _models(self, request: Request) -> Response:
        data = {"object": "list", "data": [{"id": "gpt-4.1", "object": "model", "created": 0, "owned_by": "t"}]}
        return Response(orjson.dumps(data), media_type="application/json")

    async def _chat(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.requests.append({"path": request.url.path, "headers": dict(request.headers), "json": body})
        reply = self.respond(body)
        model = body.get("model", "gpt-4.1")
        if not body.get("stream"):
            return Response(orjson.dumps(reply.completion(model)), media_type="application/json")

        async def events() -> AsyncIterator[bytes]:
            for chunk in reply.chunks(model):
                yield b"data: " + orjson.dumps(chunk) + b"\n\n"
            yield b"data: [DONE]\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")


@dataclass
class Stack:
    """A scripted model behind a real gateway; ``audit`` is the gateway's intervention log."""

    model: ChatModel
    url: str
    audit: Path

    def interventions(self) -> list[dict[str, Any]]:
        """The gateway's ``loop_intervention`` audit events, in order."""
        if not self.audit.exists():
            return []
        events = [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]
        return [event for event in events if event.get("event") == "loop_intervention"]

    def actions(self) -> list[str]:
        """What the gateway did, in order: ``warn:no_progress``, ``terminate:error_repeat`` ..."""
        return [f"{e.get('action')}:{e.get('detector')}" for e in self.interventions()]

    def terminated_requests(self) -> set[str]:
        """The client requests the gateway answered with a terminate: a client that retries the
        termination sends the same conversation again and is terminated again."""
        return {e["request_id"] for e in self.interventions() if e.get("action") == "terminate"}


def error_mode_policy() -> str:
    """The shipped default policy with ``interventions.terminate.mode: error``."""
    text = shipped_policy_path("default").read_text(encoding="utf-8")
    changed = text.replace("    mode: answer ", "    mode: error  ", 1)
    assert changed != text, "the default policy's terminate mode line moved"
    return changed


@contextmanager
def guarded(step: Step, tmp: Path, policy_text: str | None = None) -> Iterator[Stack]:
    """The scripted model on loopback, a real gateway in front of it (the shipped default policy
    unless ``policy_text``), its interventions appended to ``tmp/audit.jsonl``."""
    model = ChatModel(responder(step))
    audit = tmp / "audit.jsonl"
    policy = None
    if policy_text is not None:
        path = tmp / "policy.yaml"
        path.write_text(policy_text, encoding="utf-8")
        policy = PolicyHolder(path)
    with ExitStack() as stack:
        upstream = stack.enter_context(serve(model.app))
        config = Config.model_validate({"upstream": {"base_url": upstream + "/v1"},
                                        "audit": {"jsonl_path": str(audit)}})
        url = stack.enter_context(serve(build_app(config, policies=policy), **SERVER_OPTIONS))
        yield Stack(model, url, audit)


@contextmanager
def unguarded(step: Step, tmp: Path) -> Iterator[Stack]:
    """The scripted model alone, the CLI pointed straight at it: what the agent does without the
    gateway, to compare a healthy run's calls with."""
    model = ChatModel(responder(step))
    with serve(model.app) as url:
        yield Stack(model, url, tmp / "no-audit.jsonl")


def copilot_env(gateway: str, home: Path) -> dict[str, str]:
    """Copilot CLI on its custom OpenAI-compatible provider at the gateway, offline otherwise."""
    home.mkdir(parents=True, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR")}
    return {**keep, "HOME": str(home), "COPILOT_HOME": str(home / ".copilot"),
            "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": gateway + "/v1",
            "COPILOT_PROVIDER_TYPE": "openai", "COPILOT_PROVIDER_WIRE_API": "completions",
            "COPILOT_PROVIDER_API_KEY": "sk-copilot-test", "COPILOT_MODEL": "gpt-4.1",
            "COPILOT_AUTO_UPDATE": "false", "CI": "1", "NO_COLOR": "1"}


def run_copilot(prompt: str, work: Path, home: Path, gateway: str, stream: bool = True,
                timeout: int = 170) -> subprocess.CompletedProcess:
    """``copilot -p PROMPT`` headless in ``work``, every tool allowed, through the gateway."""
    command = [find_cli("copilot") or "copilot", "-p", prompt, "--allow-all-tools", "-C", str(work),
               "--disable-client-telemetry", "--no-auto-update", "--stream", "on" if stream else "off",
               "--log-dir", str(home / "logs")]
    return subprocess.run(command, cwd=work, env=copilot_env(gateway, home), capture_output=True,
                          text=True, timeout=timeout)
