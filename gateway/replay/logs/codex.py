"""Codex CLI and Codex Desktop rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
(``$CODEX_HOME`` moves ``~/.codex``), replayed as Responses requests.

Each line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (the session id, the CLI's
version, the base instructions, which a request carries as its first developer message),
``response_item`` (the conversation's items as they went to the API: messages, ``function_call``
and ``function_call_output``, ``custom_tool_call`` for the freeform ``apply_patch``), ``compacted``
(the history was replaced: a new segment), and events the replay does not need. Rollouts of
2025's first releases wrote the items bare, after a first line holding the session's metadata,
with the older tools: ``shell`` (the command as an argument vector, its output a JSON object) and
``shell_command`` (the command as one string).
"""

from __future__ import annotations

from typing import Any

from gateway.replay.logs.base import Format, LogError, Source, single, text_of
from gateway.replay.run import Segment

# Bookkeeping the rollout adds to an item; the request never carried it.
_LOCAL_KEYS = ("metadata", "internal_chat_message_metadata_passthrough", "timestamp")
_ENVELOPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state")


def claims(source: Source) -> bool:
    if source.is_dir or not source.name.endswith(".jsonl"):
        return False
    first = source.first()
    if not isinstance(first, dict):
        return False
    if first.get("type") in _ENVELOPES and "payload" in first:
        return True
    # The first releases: a metadata line (id, timestamp, instructions), then bare items.
    return source.name.startswith("rollout-") and "id" in first and "timestamp" in first


def read(source: Source) -> list[Any]:
    meta: dict[str, Any] = {}
    segments: list[list[Any]] = [[]]
    model = ""
    for number, record in source.dicts():
        kind, payload = record.get("type"), record.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            meta = payload
        elif kind == "turn_context" and isinstance(payload, dict):
            model = str(payload.get("model") or model)
        elif kind == "response_item" and isinstance(payload, dict):
            segments[-1].append(_item(payload))
        elif kind == "compacted" and isinstance(payload, dict):
            segments.append(_after_compaction(payload, segments[-1]))
        elif "payload" not in record and "record_type" not in record:
            if number == 1 and "type" not in record:
                meta = record  # the first releases' metadata line
            elif isinstance(record.get("type"), str):
                segments[-1].append(_item(record))
    if not any(segments):
        raise LogError("no response items in it")
    session = str(meta.get("id") or meta.get("session_id") or source.rel)
    bodies = [Segment(_body(items, meta, model), "responses") for items in segments if items]
    return single(source, "codex", bodies, id=session, profile="codex", session=session)


def _item(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k not in _LOCAL_KEYS}


def _after_compaction(payload: dict[str, Any], before: list[Any]) -> list[Any]:
    """What the requests after a compaction carry: the replacement history the rollout names,
    else the user's messages so far and the summary, as Codex rebuilds them."""
    replaced = payload.get("replacement_history")
    if isinstance(replaced, list):
        return [_item(i) for i in replaced if isinstance(i, dict)]
    kept = [i for i in before if i.get("type") == "message" and i.get("role") == "user"]
    summary = text_of(payload.get("message")) or str(payload.get("message") or "")
    return [*kept, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}]


def _body(items: list[Any], meta: dict[str, Any], model: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model or "codex", "input": items}
    base = meta.get("base_instructions")
    prompt = base.get("text") if isinstance(base, dict) else None
    if isinstance(prompt, str) and prompt:
        # Its requests open with the base instructions as a developer message.
        opening = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": prompt}]}
        body["input"] = items if items[:1] == [opening] else [opening, *items]
    elif isinstance(meta.get("instructions"), str) and meta["instructions"]:
        body["instructions"] = meta["instructions"]
    return body


FORMAT = Format(
    "codex",
    "Codex CLI / Codex Desktop",
    "~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl ($CODEX_HOME moves ~/.codex)",
    claims,
    read,
)
