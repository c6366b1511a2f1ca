"""Agents on Bedrock's InvokeModel for the tests: an application's own tool loop and the
anthropic SDK's tool runner, and the scripted models they talk to (a loop, a healthy run)."""

from __future__ import annotations

import re
from typing import Any

import anthropic
from anthropic import beta_tool

from support.anthropic_upstream import Said
from support.bedrock_upstream import MODEL

FINAL = "I could not finish: a.txt never changed."
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]


def tools_closed(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice")
    return not body.get("tools") or (isinstance(choice, dict) and choice.get("type") == "none")


def stubborn(body: dict[str, Any]) -> Said:
    """Reads a.txt forever; with tools closed, its final answer."""
    return Said(text=FINAL) if tools_closed(body) else Said(calls=[("read_file", {"path": "a.txt"})])


def healthy(body: dict[str, Any]) -> Said:
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if step < 3:
        return Said(text=f"Reading file {step}.", calls=[("read_file", {"path": f"src/f{step}.py"})])
    return Said(text="All files read: nothing to fix.")


def ids_out(body: bytes) -> bytes:
    """``body`` without the scripted model's tool ids (each run numbers its own)."""
    return re.sub(rb"toolu_\d+", b"toolu_", body)


def tool_loop(client: anthropic.AnthropicBedrock, stream: bool, model: str = MODEL, limit: int = 20) -> tuple[str, int]:
    """An application's own agent loop: (final text, executed calls)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "summarize a.txt"}]
    executed = 0
    for _ in range(limit):
        if stream:
            with client.messages.stream(model=model, max_tokens=256, messages=messages, tools=TOOLS) as events:
                reply = events.get_final_message()
        else:
            reply = client.messages.create(model=model, max_tokens=256, messages=messages, tools=TOOLS)
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text"), executed
        executed += len(calls)
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": c.id, "content": "the same text"} for c in calls],
            }
        )
    raise AssertionError("the run never ended")


def runner(client: anthropic.AnthropicBedrock, stream: bool) -> tuple[str, int]:
    """The SDK's tool runner: it runs ``read_file`` itself."""
    executed: list[str] = []

    @beta_tool
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: the file
        """
        executed.append(path)
        return "the same text"

    run = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        tools=[read_file],
        messages=[{"role": "user", "content": "summarize a.txt"}],
        stream=stream,
    )
    last = None
    for step in run:
        last = step.get_final_message() if stream else step
    assert last is not None
    return "".join(b.text for b in last.content if b.type == "text"), len(executed)
