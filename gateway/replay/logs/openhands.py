"""OpenHands event logs, replayed as chat-completions requests (OpenHands speaks to models through
LiteLLM's chat completions).

Where they lie: a conversation's ``events/`` folder, one JSON file per event
(``~/.openhands/sessions/<id>/events/<n>.json`` before 1.0, ``~/.openhands/conversations/<id>/
events/event-<n>-<uuid>.json`` from the 1.0 SDK on), or a trajectory: a JSON list of events, an
object with a ``history`` list, or JSON lines each with one (the resolver's and the benchmarks'
``output.jsonl``).

Two event shapes, read alike (``openhands_events``): the first OpenHands' ``action`` /
``observation`` events, and the SDK's events by ``kind``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gateway.replay.logs.base import Format, LogError, Source
from gateway.replay.logs.openhands_events import Conversation, file_order, is_event
from gateway.replay.run import Run, Segment


def claims(source: Source) -> bool:
    if source.is_dir:
        return source.name == "events" and any(source.path.glob("*.json"))
    document = source.document()
    if document is not None:
        return _history(document) is not None
    first = source.first()
    return isinstance(first, dict) and _history(first) is not None


def read(source: Source) -> Iterator[Run]:
    if source.is_dir:
        yield _run(source, _folder(source), source.path.parent.name, source.rel)
        return
    document = source.document()
    if document is not None:
        history = _history(document)
        if history is None:
            raise LogError("no OpenHands events in it")
        named = document.get("instance_id") or document.get("id") if isinstance(document, dict) else None
        yield _run(source, history, str(named or source.rel), source.rel)
        return
    read = 0
    for number, record in source.stream():  # a trajectory a line: one run's memory at a time
        history = _history(record)
        if history:
            read += 1
            ident = str(record.get("instance_id") or record.get("id") or f"{source.rel}:{number}")
            yield _run(source, history, ident, f"{source.rel}:{number}")
    if not read:
        raise LogError("no OpenHands events in it")


def _history(document: Any) -> list[Any] | None:
    history = document.get("history") if isinstance(document, dict) else document
    if isinstance(history, list) and any(is_event(e) for e in history[:20]):
        return history
    return None


def _folder(source: Source) -> list[Any]:
    found = []
    for path in source.path.glob("*.json"):
        try:
            found.append((file_order(path.name), Source(path, path.name).document()))
        except LogError:
            continue
    return [event for _, event in sorted(found, key=lambda pair: pair[0]) if isinstance(event, dict)]


def _run(source: Source, history: list[Any], ident: str, path: str) -> Run:
    conversation = Conversation()
    for event in history:
        if isinstance(event, dict):
            conversation.add(event)
    segments = [Segment(body, "chat") for body in conversation.bodies() if body["messages"]]
    if not segments:
        raise LogError("no conversation in it")
    return Run(path, ident, "openhands", segments, file=str(source.path), profile="openhands", session=ident)


FORMAT = Format(
    "openhands",
    "OpenHands",
    "~/.openhands/conversations/<id>/events/ (sessions/<id>/events/ before 1.0), trajectories "
    "(a JSON list of events, or output.jsonl lines with a history)",
    claims,
    read,
)
