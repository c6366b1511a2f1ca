"""Gemini CLI chats and checkpoints: ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` (``.json``
before 0.50), ``~/.gemini/tmp/<project>/checkpoint-<tag>.json``, replayed as Gemini requests.

A chat is the CLI's own record of the session: a header (``sessionId``, ``projectHash``), then
messages by ``id`` (``user``, ``gemini``; ``info`` and ``error`` are the CLI's notices, never sent),
a later line with the same ``id`` replacing the earlier one, ``{"$set": {...}}`` lines setting
fields of the session (its first ``messages``). A ``gemini`` message carries its ``toolCalls``,
each with the ``functionResponse`` parts that answered it (``result``); the versions that also
write those parts as a user message get them once. Older chats are one JSON object with the
``messages`` list. A checkpoint (``/chat save``) is the history as the API got it: ``{role,
parts}`` contents. Neither records the system instruction or the tools: the replay reads the run
through the Gemini CLI profile.
"""

from __future__ import annotations

from typing import Any

from gateway.replay.logs.base import Format, LogError, Source, single
from gateway.replay.run import Segment

_SKIP = ("info", "error", "warning")


def claims(source: Source) -> bool:
    if source.is_dir:
        return False
    name = source.name
    if name.startswith("checkpoint") and name.endswith(".json"):
        return _history(source.document()) is not None
    first = source.first()
    return isinstance(first, dict) and "sessionId" in first and "projectHash" in first


def read(source: Source) -> list[Any]:
    if source.name.startswith("checkpoint"):
        contents = _history(source.document())
        if contents is None:
            raise LogError("not a checkpoint: no list of {role, parts}")
        return single(source, "gemini_cli", [Segment({"contents": contents}, "gemini")], profile="gemini_cli")
    session = _session(source)
    messages = session.get("messages")
    if not isinstance(messages, list):
        raise LogError("no messages in it")
    contents, model = _contents([m for m in messages if isinstance(m, dict)])
    ident = str(session.get("sessionId") or source.rel)
    segment = Segment({"contents": contents}, "gemini")
    return single(source, "gemini_cli", [segment], id=ident, profile="gemini_cli", session=ident, model=model)


def _history(document: Any) -> list[Any] | None:
    history = document.get("history") if isinstance(document, dict) else document
    if isinstance(history, list) and history and all(isinstance(c, dict) and "parts" in c for c in history):
        return history
    return None


def _session(source: Source) -> dict[str, Any]:
    """The session object the chat's lines build (an older chat: the document itself)."""
    document = source.document()
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        return document
    session: dict[str, Any] = {}
    by_id: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for _, record in source.dicts():
        update = record.get("$set")
        if isinstance(update, dict):
            session.update(update)
            if isinstance(update.get("messages"), list):
                order, by_id = _index(update["messages"])
        elif isinstance(record.get("id"), str) and "type" in record:
            if record["id"] not in by_id:
                order.append(record["id"])
            by_id[record["id"]] = record  # a later line with the same id replaces the earlier one
        elif "sessionId" in record:
            session.update(record)
    session["messages"] = [by_id[i] for i in order]
    return session


def _index(messages: list[Any]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    found = {str(m.get("id")): m for m in messages if isinstance(m, dict)}
    return list(found), found


def _contents(messages: list[dict[str, Any]]) -> tuple[list[Any], str | None]:
    contents: list[dict[str, Any]] = []
    answered: set[str] = set()
    model = None
    for message in messages:
        kind = message.get("type")
        if kind == "gemini":
            model = message.get("model") or model
            calls = [c for c in message.get("toolCalls") or [] if isinstance(c, dict)]
            parts = _parts(message.get("content")) + [_call(c) for c in calls]
            if parts:
                contents.append({"role": "model", "parts": parts})
            results = [p for c in calls for p in _results(c.get("result"))]
            if results:
                contents.append({"role": "user", "parts": results})
                answered |= {i for i in map(_response_id, results) if i}
        elif kind not in _SKIP:
            parts = [p for p in _parts(message.get("content")) if _response_id(p) not in answered]
            if not parts:
                continue
            if contents and contents[-1]["role"] == "user":
                contents[-1]["parts"] = contents[-1]["parts"] + parts
            else:
                contents.append({"role": "user", "parts": parts})
    return contents, model


def _parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, list):
        return [p for p in content if isinstance(p, dict)]
    return [content] if isinstance(content, dict) else []


def _call(call: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"name": call.get("name", ""), "args": call.get("args") or {}}
    if call.get("id"):
        found["id"] = call["id"]
    return {"functionCall": found}


def _results(result: Any) -> list[dict[str, Any]]:
    parts = result if isinstance(result, list) else [result]
    return [p for p in parts if isinstance(p, dict) and "functionResponse" in p]


def _response_id(part: Any) -> str | None:
    response = part.get("functionResponse") if isinstance(part, dict) else None
    return str(response.get("id")) if isinstance(response, dict) and response.get("id") else None


FORMAT = Format(
    "gemini_cli",
    "Gemini CLI",
    "~/.gemini/tmp/<project>/chats/session-*.jsonl (.json before 0.50), checkpoint-<tag>.json",
    claims,
    read,
)
