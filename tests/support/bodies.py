"""A script (see tests/support/classes.py) as the request body each guarded protocol carries
after its last round: chat completions, the Responses API, Anthropic Messages, the Gemini API.
The same run in four wire formats, for tests that hold the gateway to judging them alike."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

Script = Sequence[Any]
PROTOCOLS = ("chat", "responses", "anthropic", "gemini")


def rounds(script: Script) -> list[str | list[tuple[str, Any, str]]]:
    """The script's user messages (strings) and rounds (lists of calls) in order."""
    return [item if isinstance(item, str) else list(item) if isinstance(item, list) else [item] for item in script]


def _text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _object(args: Any) -> dict[str, Any]:
    """Arguments as a JSON object, for protocols whose calls carry one (freeform text under
    ``input``, as Codex's apply_patch is declared on protocols without freeform tools)."""
    return args if isinstance(args, dict) else {"input": args}


def chat(script: Script, tools: Sequence[str] | None, system: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    n = 0
    for item in rounds(script):
        if isinstance(item, str):
            messages.append({"role": "user", "content": item})
            continue
        calls = []
        for tool, args, _ in item:
            n += 1
            calls.append({"id": f"call_{n}", "type": "function", "function": {"name": tool, "arguments": _text(args)}})
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": r} for c, (_, _, r) in zip(calls, item)]
    body: dict[str, Any] = {"model": "gpt-test", "messages": messages}
    if tools is not None:
        body["tools"] = [{"type": "function", "function": {"name": t, "parameters": {"type": "object"}}} for t in tools]
    return body


def responses(script: Script, tools: Sequence[str] | None, system: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    n = 0
    for item in rounds(script):
        if isinstance(item, str):
            items.append({"role": "user", "content": item})
            continue
        outputs = []
        for tool, args, result in item:
            n += 1
            call_id = f"call_{n}"
            if isinstance(args, str):  # a freeform tool (Codex's apply_patch)
                items.append({"type": "custom_tool_call", "call_id": call_id, "name": tool, "input": args})
                outputs.append({"type": "custom_tool_call_output", "call_id": call_id, "output": result})
            else:
                items.append({"type": "function_call", "call_id": call_id, "name": tool, "arguments": _text(args)})
                outputs.append({"type": "function_call_output", "call_id": call_id, "output": result})
        items += outputs
    body: dict[str, Any] = {"model": "gpt-test", "instructions": system, "input": items}
    if tools is not None:
        body["tools"] = [{"type": "function", "name": t, "parameters": {"type": "object"}} for t in tools]
    return body


def anthropic(script: Script, tools: Sequence[str] | None, system: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    n = 0
    for item in rounds(script):
        if isinstance(item, str):
            messages.append({"role": "user", "content": item})
            continue
        uses, results = [], []
        for tool, args, result in item:
            n += 1
            uses.append({"type": "tool_use", "id": f"toolu_{n}", "name": tool, "input": _object(args)})
            results.append({"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": result})
        messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    body: dict[str, Any] = {"model": "claude-test", "max_tokens": 1024, "system": system, "messages": messages}
    if tools is not None:
        body["tools"] = [{"name": t, "input_schema": {"type": "object"}} for t in tools]
    return body


def gemini(script: Script, tools: Sequence[str] | None, system: str) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    for item in rounds(script):
        if isinstance(item, str):
            contents.append({"role": "user", "parts": [{"text": item}]})
            continue
        contents.append(
            {"role": "model", "parts": [{"functionCall": {"name": t, "args": _object(a)}} for t, a, _ in item]}
        )
        contents.append(
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": t, "response": {"output": r}}} for t, _, r in item],
            }
        )
    body: dict[str, Any] = {"systemInstruction": {"parts": [{"text": system}]}, "contents": contents}
    if tools is not None:
        body["tools"] = [{"functionDeclarations": [{"name": t, "parameters": {"type": "object"}} for t in tools]}]
    return body


BODIES: dict[str, Callable[[Script, Sequence[str] | None, str], dict[str, Any]]] = {
    "chat": chat,
    "responses": responses,
    "anthropic": anthropic,
    "gemini": gemini,
}
