"""Gemini API request bodies (``generateContent``) -> protocol-neutral Conversation.

``contents`` is a list of ``{"role": "user" | "model", "parts": [...]}``. A model turn's
``functionCall`` parts (``{"name", "args", "id"?}``) are its calls; the next user turn answers
them with ``functionResponse`` parts (``{"name", "response", "id"?}``), one neutral ``tool`` turn
each, sharing the content's index. ``systemInstruction`` is a system turn with index -1. Tools
are ``tools[].functionDeclarations[].name``.

The Gemini API gives calls no id unless the client asks for them (it answers a call by its
name, in order), so a call without one is named by where it is: ``gemini:<content>:<n>``, the
n-th call of that content, and a response is paired with the first unanswered call of the
previous model turn that has its name. Nothing here raises on a body.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.trace.model import Conversation, ToolCall, Turn
from gateway.wire import codec

SYNTHETIC = "gemini:"  # prefix of an id the gateway gave a call: never sent to the API


def contents_of(payload: Any) -> list[Any]:
    contents = payload.get("contents") if isinstance(payload, dict) else None
    return contents if isinstance(contents, list) else []


def conversation(payload: Any, contents: Any, start: int = 0) -> Conversation:
    payload = payload if isinstance(payload, dict) else {}
    turns: list[Turn] = []
    system = text_of(payload.get("systemInstruction")) if start == 0 else ""
    if system:
        turns.append(Turn(-1, "system", system))
    if isinstance(contents, list):
        for index in range(max(start, 0), len(contents)):
            previous = contents[index - 1] if index > 0 else None
            turns.extend(turns_of(contents[index], index, previous))
    return Conversation(tuple(turns), declared_tools(payload))


def turns_of(content: Any, index: int, previous: Any = None) -> Iterator[Turn]:
    if not isinstance(content, dict):
        return
    parts = parts_of(content)
    if content.get("role") == "model":
        yield Turn(index, "assistant", text_of(content), tuple(calls_of(parts, index)))
        return
    responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
    if not responses:
        yield Turn(index, "user", text_of(content))
        return
    # A user turn carrying function responses continues the run: its other text is not a new
    # prompt (as with Anthropic's tool_result turns).
    ids = answered_ids(previous, index - 1, responses)
    for response, ident in zip(responses, ids):
        body = response.get("response")
        yield Turn(
            index,
            "tool",
            _result_text(body),
            (),
            ident,
            _name(response),
            True if isinstance(body, dict) and "error" in body else None,
        )


def parts_of(content: Any) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def text_of(content: Any) -> str:
    """The text parts of a content (thoughts left out), joined by newlines."""
    return "\n".join(
        p["text"] for p in parts_of(content) if isinstance(p.get("text"), str) and p.get("thought") is not True
    )


def calls_of(parts: list[dict[str, Any]], index: int | str) -> Iterator[ToolCall]:
    """The ``functionCall`` parts as neutral calls; ``index`` names calls that have no id."""
    n = 0
    for part in parts:
        call = part.get("functionCall")
        if not isinstance(call, dict) or not _name(call):
            continue
        ident = call.get("id")
        yield ToolCall(
            ident if isinstance(ident, str) and ident else f"{SYNTHETIC}{index}:{n}",
            call["name"],
            arguments_text(call.get("args")),
        )
        n += 1


def answered_ids(model: Any, index: int, responses: list[dict[str, Any]]) -> list[str | None]:
    """The call id each response answers: its own id when a call has it, else the first
    unanswered call of the model turn before it with the same name, else the call at its
    position. (Gemini CLI 0.10 gives each response an id of its own and its calls none.)"""
    calls = list(calls_of(parts_of(model), index)) if isinstance(model, dict) and model.get("role") == "model" else []
    open_calls = list(calls)
    known = {c.id for c in calls}
    out: list[str | None] = []
    for position, response in enumerate(responses):
        ident = response.get("id")
        if isinstance(ident, str) and ident and (ident in known or not calls):
            out.append(ident)
            open_calls = [c for c in open_calls if c.id != ident]
            continue
        match = next((c for c in open_calls if c.name == response.get("name")), None)
        if match is None and position < len(calls) and calls[position] in open_calls:
            match = calls[position]
        if match is not None:
            open_calls.remove(match)
        out.append(match.id if match is not None else None)
    return out


def declared_tools(payload: dict[str, Any]) -> frozenset[str] | None:
    """Names of every function declared; None when none are, or one cannot be read (an
    incomplete set would flag real tools). Built-in tools (search, code execution) make no
    function calls."""
    tools = payload.get("tools")
    if not isinstance(tools, list):
        return None
    names: set[str] = set()
    for tool in tools:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations if isinstance(declarations, list) else ():
            name = declaration.get("name") if isinstance(declaration, dict) else None
            if not isinstance(name, str) or not name:
                return None
            names.add(name)
    return frozenset(names) or None


def arguments_text(value: Any) -> str:
    if value is None:
        return "{}"
    try:
        return codec.dumps(value).decode()
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _result_text(body: Any) -> str:
    if isinstance(body, dict) and len(body) == 1:  # {"result": ...} / {"output": ...} / {"error": ...}
        (only,) = body.values()
        if isinstance(only, str):
            return only
    return arguments_text(body)


def _name(entry: dict[str, Any]) -> str | None:
    name = entry.get("name")
    return name if isinstance(name, str) and name else None
