"""Cline and Roo Code tasks, replayed as chat-completions requests (what Cline's OpenAI-compatible
providers send).

- The VS Code extensions keep ``tasks/<id>/api_conversation_history.json`` in the editor's
  storage (``globalStorage/saoudrizwan.claude-dev`` for Cline, ``rooveterinaryinc.roo-cline`` for
  Roo Code): the history as Anthropic-style messages, tools used either natively (``tool_use`` /
  ``tool_result`` blocks) or as XML in the text (``cline_xml``).
- Cline CLI keeps ``~/.cline/data/sessions/<id>/<id>.messages.json``: ``{"sessionId",
  "system_prompt", "messages"}``, tools native, each result a list of per-element JSON objects that
  goes to the model as that JSON.

A user message's tool results become tool messages; the editor's ``<environment_details>`` block is
context the harness adds to every message, not the user's words, and is left out; what else the
user wrote follows the results as a user message.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from gateway.replay.logs.base import Format, LogError, Source, single, text_of
from gateway.replay.logs.cline_xml import call_in, result_name, split_result
from gateway.replay.run import Segment

HISTORY = "api_conversation_history.json"
ROO = ("rooveterinaryinc.", "roo-code", "roo-cline")  # Roo Code's storage folder names it
_USER_INPUT = re.compile(r"^<user_input[^>]*>(.*)</user_input>$", re.DOTALL)  # Cline CLI's wrapper


def claims(source: Source) -> bool:
    if source.is_dir:
        return False
    name = source.name
    if name == HISTORY:
        return isinstance(source.document(), list)
    document = source.document() if name.endswith(".messages.json") else None
    return isinstance(document, dict) and isinstance(document.get("messages"), list)


def read(source: Source) -> list[Any]:
    document = source.document()
    if isinstance(document, list):  # a task folder's history
        system, history = "", document
        ident = source.path.parent.name
    elif isinstance(document, dict) and isinstance(document.get("messages"), list):
        system, history = str(document.get("system_prompt") or ""), document["messages"]
        ident = str(document.get("sessionId") or source.path.parent.name)
    else:
        raise LogError("not a Cline history: no list of messages")
    messages = ([{"role": "system", "content": system}] if system else []) + _chat(history)
    roo = any(part.lower().startswith(ROO) for part in source.path.parts)
    profile, agent = (None, "roo_code") if roo else ("cline", None)
    model = next((m["modelInfo"].get("id") for m in history if isinstance(m, dict) and _info(m)), None)
    body = {"model": model or "", "messages": messages}
    return single(source, "cline", [Segment(body, "chat")], id=ident, profile=profile, agent=agent, session=ident)


def _info(message: dict[str, Any]) -> bool:
    return isinstance(message.get("modelInfo"), dict) and bool(message["modelInfo"].get("id"))


def _chat(history: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: tuple[str, str] | None = None  # (call id, tool) of an XML call awaiting its result
    for number, message in enumerate(history):
        if not isinstance(message, dict):
            continue
        blocks = _blocks(message.get("content"))
        if message.get("role") == "assistant":
            pending = _assistant(out, blocks, history[number + 1 : number + 2], f"xml_{number}")
        elif message.get("role") == "user":
            _user(out, blocks, pending)
            pending = None
    return out


def _assistant(
    out: list[dict[str, Any]], blocks: list[Any], following: list[Any], ident: str
) -> tuple[str, str] | None:
    text = "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
    calls = [_native(b) for b in blocks if b.get("type") == "tool_use"]
    pending = None
    if not calls:
        answer = _blocks(following[0].get("content")) if following and isinstance(following[0], dict) else []
        named = next((result_name(b.get("text", "")) for b in answer if b.get("type") == "text"), None)
        found = call_in(text, named)
        if found is not None:
            text = found.text
            calls = [_function(ident, found.name, found.params)]
            pending = (ident, found.name)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    out.append(message)
    return pending


def _user(out: list[dict[str, Any]], blocks: list[Any], pending: tuple[str, str] | None) -> None:
    for block in blocks:
        if block.get("type") == "tool_result":
            out.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")), "content": _result(block)})
    texts = [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
    result, rest = split_result(texts)
    if pending is not None and result is not None:
        out.append({"role": "tool", "tool_call_id": pending[0], "content": result})
    elif result is not None:
        rest.insert(0, result)
    said = "\n".join(_unwrapped(t) for t in rest if t.strip())
    if said:
        out.append({"role": "user", "content": said})


def _native(block: dict[str, Any]) -> dict[str, Any]:
    arguments = block.get("input")
    return _function(str(block.get("id", "")), str(block.get("name", "")), arguments if arguments is not None else {})


def _function(ident: str, name: str, arguments: Any) -> dict[str, Any]:
    raw = orjson.dumps(arguments).decode()
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": raw}}


def _result(block: dict[str, Any]) -> str:
    """A result's text as the model got it: its text blocks, else the JSON Cline CLI sends."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in ("text", "image") for p in content):
        return text_of(content)
    return orjson.dumps(content).decode()


def _unwrapped(text: str) -> str:
    found = _USER_INPUT.match(text.strip())
    return found.group(1) if found else text


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


FORMAT = Format(
    "cline",
    "Cline / Roo Code",
    "VS Code globalStorage/<extension>/tasks/<id>/api_conversation_history.json; Cline CLI "
    "~/.cline/data/sessions/<id>/<id>.messages.json",
    claims,
    read,
)
