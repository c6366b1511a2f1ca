"""Recorded request bodies: JSON lines (or a JSON list) of chat-completions, Anthropic Messages,
Responses or Gemini request bodies, bare or wrapped (``{"request": {...}}``), each read by the
protocol whose adapter recognises it (``Declaration.reads``, in the registry's order).

An agent sends one growing body per step: bodies whose items are a prefix of a longer one are the
same conversation, and only the longest is kept. A line that names its run (``id``, with
``label``, ``agent``, ``loop_at`` as a labelled corpus writes them) is a run of its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.protocols.registry import reader_of
from gateway.replay.logs.base import Format, LogError, Source
from gateway.replay.run import Run, Segment

_WRAPPERS = ("body", "request")  # recorders often wrap the body: {"request": {...}, "response": ...}
LABELS = ("loop", "healthy", "borderline")


@dataclass(slots=True)
class Recorded:
    position: int  # line (JSON lines) or 1-based index (a JSON list)
    record: dict[str, Any]
    segment: Segment


def claims(source: Source) -> bool:
    if source.is_dir:
        return False
    document = source.document()
    if isinstance(document, list):
        return any(_body(item) for item in document[:5])
    return any(_body(record) for _, record in source.head(5))


def read(source: Source, protocol: str | None = None) -> Iterator[Run]:
    """``protocol``: read every body in it (``--format messages``), not the one recognised.
    Runs that name themselves (a labelled corpus) are read one line at a time; anonymous bodies
    are read whole, to merge each conversation's growing bodies."""
    first = source.first()
    if isinstance(first, dict) and isinstance(first.get("id"), str | int) and source.document() is None:
        yield from _streamed(source, protocol)
        return
    found, problems = recorded(source, protocol)
    if not found:
        raise LogError("; ".join(problems[:3]) or "no request bodies in it")
    yield from runs(source, found)


def _streamed(source: Source, protocol: str | None) -> Iterator[Run]:
    read = 0
    for position, record in source.stream():
        body = _body(record, protocol)
        if body is not None and isinstance(record, dict) and isinstance(record.get("id"), str | int):
            read += 1
            yield _named(source, Recorded(position, record, Segment(body[1], body[0])))
    if not read:
        raise LogError("no request bodies in it")


def runs(source: Source, found: list[Recorded]) -> list[Run]:
    named = [r for r in found if isinstance(r.record.get("id"), str | int)]
    if named:
        return [_named(source, r) for r in named]
    return [_anonymous(source, r) for r in longest_per_conversation(found)]


def recorded(source: Source, protocol: str | None) -> tuple[list[Recorded], list[str]]:
    """The bodies in ``source``, and where it holds lines that are none ("<line>: why")."""
    document = source.document()
    items = list(enumerate(document, 1)) if isinstance(document, list) else source.records()
    found: list[Recorded] = []
    problems = [f"{n}: invalid JSON" for n in source.bad_lines]
    for position, item in items:
        body = _body(item, protocol)
        if body is None:
            problems.append(f"{position}: no messages list or input; skipped")
        else:
            found.append(Recorded(position, item, Segment(body[1], body[0])))
    problems.sort(key=lambda p: int(p.split(":", 1)[0]))
    return found, problems


def _body(item: Any, protocol: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """(protocol, body) of a recorded item, bare or wrapped."""
    if not isinstance(item, dict):
        return None
    for candidate in (item, *(item.get(key) for key in _WRAPPERS)):
        if not isinstance(candidate, dict):
            continue
        if protocol is not None:
            return (protocol, candidate) if candidate.get("messages") or candidate.get("contents") else None
        kind = reader_of(candidate)
        if kind is not None:
            return kind.name, candidate
    return None


def _named(source: Source, recorded: Recorded) -> Run:
    record = recorded.record
    label = record.get("label") if record.get("label") in LABELS else None
    loop_at = record.get("loop_at") if isinstance(record.get("loop_at"), int) else None
    agent = record.get("agent") if isinstance(record.get("agent"), str) else None
    path = f"{source.rel}:{recorded.position}"
    ident = str(record["id"])
    return Run(path, ident, "requests", [recorded.segment], str(source.path), agent=agent, label=label, loop_at=loop_at)


def _anonymous(source: Source, recorded: Recorded) -> Run:
    path = f"{source.rel}:{recorded.position}"
    return Run(path, path, "requests", [recorded.segment], str(source.path), shared_state=True)


def longest_per_conversation(bodies: list[Recorded]) -> list[Recorded]:
    """Drop every body whose messages are a prefix of a longer kept one (same conversation,
    earlier step); counts them on the kept one. Input order is kept."""
    chains = [_prefix_hashes(r.segment.messages) for r in bodies]
    owner: dict[bytes, int] = {}  # prefix hash -> index of the kept body it belongs to
    kept: list[int] = []
    for index in sorted(range(len(bodies)), key=lambda i: -len(chains[i])):
        if not chains[index]:
            continue
        full = chains[index][-1]
        if full in owner:
            bodies[owner[full]].segment.requests += 1
            continue
        kept.append(index)
        for digest in chains[index]:
            owner.setdefault(digest, index)
    return [bodies[i] for i in sorted(kept)]


def _prefix_hashes(messages: list[Any]) -> list[bytes]:
    out, running = [], b""
    for message in messages:
        running = hashlib.blake2b(running + orjson.dumps(message, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()
        out.append(running)
    return out


FORMAT = Format(
    "requests",
    "request bodies (chat completions, Anthropic Messages, Responses, Gemini)",
    "JSON lines of request bodies as a logging proxy records them, or a JSON list of them",
    claims,
    read,
)
