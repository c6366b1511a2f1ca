"""``loopguard demo``: a loop being caught, in one process, on loopback only, no API key.

Three parts talk over real HTTP on 127.0.0.1: a scripted model that is stuck (it re-reads the same
file whatever it is told), the gateway with the shipped default policy, and a small agent that
executes the model's tool calls. The transcript shows the ladder: warn -> reject -> terminate.
"""

from __future__ import annotations

import json
import sys
import time
from typing import IO, Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

PROMPT = "Summarize notes.txt in one sentence."
NOTES = "Q3 planning: ship the billing revamp by Sept 30; hire two SREs; freeze the legacy API in October."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
MARK = "[loopguard]"


class StuckModel:
    """An OpenAI-compatible model that keeps calling read_file on the same file."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        n = len(self.requests)
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": "notes.txt"})},
        }
        message = {"role": "assistant", "content": "Let me read notes.txt again to be sure.", "tool_calls": [call]}
        return JSONResponse(
            {
                "id": f"chatcmpl-demo{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "stuck-model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 50 * n, "completion_tokens": 20, "total_tokens": 50 * n + 20},
            }
        )


def run_demo(out: IO[str] = sys.stdout, max_steps: int = 12) -> int:
    from gateway.audit.memory_sink import MemorySink
    from gateway.config import Config
    from gateway.loopback import serve
    from gateway.policy.holder import PolicyHolder
    from gateway.server.app import SERVER_OPTIONS, build_app

    model = StuckModel()
    with serve(model.app) as model_url:
        app = build_app(Config.model_validate({"upstream": {"base_url": model_url + "/v1"}}), policies=PolicyHolder())
        events = MemorySink()
        app.state.gateway.audit.add(events)
        with serve(app, **SERVER_OPTIONS) as gateway_url:
            say = Transcript(out)
            say.intro(app.state.gateway.policies.current)
            outcome = _agent(gateway_url, model, events, say, max_steps)
    return 0 if outcome == "terminate" else 1


def _agent(url: str, model: StuckModel, events: Any, say: Transcript, max_steps: int) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    say.line("user", f"> {PROMPT}")
    executed = 0
    with httpx.Client(base_url=url + "/v1", timeout=30) as client:
        for step in range(1, max_steps + 1):
            seen = len(model.requests)
            response = client.post(
                "/chat/completions",
                json={"model": "stuck-model", "messages": messages, "tools": TOOLS},
                headers={"Authorization": "Bearer not-needed"},
            )
            response.raise_for_status()
            action: str = response.headers.get("x-loopguard-action", "pass")
            message = response.json()["choices"][0]["message"]
            say.step(step, events.drain(), model.requests[seen:], message)
            messages.append(message)
            if not message.get("tool_calls"):
                say.finish(action, executed)
                return action
            for call in message["tool_calls"]:
                executed += 1
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": NOTES})
                say.line("agent", f'ran {call["function"]["name"]} (execution #{executed}) -> "{NOTES[:48]}..."')
    say.line("demo", "the loop was not stopped within the step budget")
    return "pass"


class Transcript:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.label = ""  # printed in the left column of the next line only

    def line(self, who: str, text: str) -> None:
        print(f"{self.label:<9} {who:<8} {text}", file=self.out, flush=True)
        self.label = ""

    def intro(self, policy: Any) -> None:
        np = policy.default.detectors["no_progress"]
        print(
            "LoopGuard demo: an agent, a model stuck in a loop, and the gateway between them (127.0.0.1 only).",
            file=self.out,
        )
        print(
            f"policy: {policy.name} (no_progress: warn at {np.warn_at}, reject at {np.reject_at}, terminate at "
            f"{np.terminate_at}; re-asks after a veto: {policy.default.interventions.reject.max_reasks})\n",
            file=self.out,
        )

    def step(self, step: int, events: list[Any], requests: list[dict[str, Any]], message: dict[str, Any]) -> None:
        self.label = f"step {step}"
        for event in (e for e in events if e.phase == "request"):
            self._event(event, _anchor(requests[0]) if requests else "")
        calls = [e for e in events if e.phase == "response"]
        for n, event in enumerate(calls):
            self.line("model", "proposes read_file(notes.txt) again")
            said = _observation(requests[n + 1]) if n + 1 < len(requests) else ""
            self._event(event, said)
        for call in message.get("tool_calls") or []:
            self.line("model", f"-> {call['function']['name']}({call['function']['arguments']})")
        if not message.get("tool_calls"):
            self.line("reply", _short(message.get("content") or "", 160))

    def _event(self, event: Any, text: str) -> None:
        what = {
            "warn": "alert added to the request before the model reads it",
            "reject": "the call is NOT executed; the model gets an error observation and is asked again",
            "terminate": "the model insisted; the run is ended with a normal reply",
        }.get(event.action, event.action)
        self.line("gateway", f"{event.action.upper()} ({event.detector}, {event.count}x {event.tool}): {what}")
        if text:
            self.line("", f'the model reads: "{_short(text, 150)}"')

    def finish(self, action: str, executed: int) -> None:
        print(
            f"\nThe agent stopped cleanly (x-loopguard-action: {action}); read_file ran {executed} times, not forever.",
            file=self.out,
        )


def _anchor(request: dict[str, Any]) -> str:
    return next(
        (
            m["content"]
            for m in reversed(request.get("messages", []))
            if m.get("role") == "system" and str(m.get("content", "")).startswith("[LoopGuard]")
        ),
        "",
    )


def _observation(request: dict[str, Any]) -> str:
    return next(
        (
            m["content"]
            for m in reversed(request.get("messages", []))
            if m.get("role") == "tool" and str(m.get("content", "")).lower().startswith(MARK)
        ),
        "",
    )


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
