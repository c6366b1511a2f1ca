"""Recorded traffic in: JSONL of request bodies (or a JSON list of them) of a guarded protocol,
each recognised by its adapter (``Declaration.reads``, asked in the registry's order). An agent
sends one growing body per step, so bodies whose items are a prefix of a longer one are the same
conversation: only the longest is kept. (A Responses body continuing a stored response, with
``previous_response_id``, carries only its new items: it is judged on what it carries.)"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from gateway.protocols.registry import BY_NAME, reader_of
from gateway.protocols.roles import Kind
from gateway.trace.model import Conversation

_WRAPPERS = ("body", "request")  # recorders often wrap the body: {"request": {...}, "response": ...}


@dataclass(slots=True)
class Recorded:
    source: str  # file name
    position: int  # line (JSONL) or 1-based index (JSON list)
    body: dict[str, Any]
    protocol: str  # the adapter's name (``gateway.protocols.registry.BY_NAME``)
    requests: int = 1  # how many recorded bodies were this conversation

    @property
    def label(self) -> str:
        return f"{self.source}:{self.position}"

    @property
    def kind(self) -> Kind:
        """The protocol the body speaks."""
        return BY_NAME[self.protocol]

    @property
    def path(self) -> str:
        """The route the body was sent to (policies may match on it): its protocol's first."""
        return self.kind.declared.routes[0]

    @property
    def messages(self) -> list[Any]:
        """The body's conversation items (``Requests.items``)."""
        return self.kind.requests.items(self.body)

    def conversation(self) -> Conversation:
        """The body read in its own protocol."""
        return self.kind.requests.conversation(self.body, self.messages)


@dataclass(slots=True)
class Reading:
    conversations: list[Recorded]
    bodies: int  # bodies read, before merging growing ones
    problems: list[str]  # "file:line: why", for lines that were skipped


def read_files(paths: Iterable[str | Path]) -> Reading:
    bodies: list[Recorded] = []
    problems: list[str] = []
    for path in paths:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{path}: cannot read: {exc}")
            continue
        for position, item, problem in _items(text):
            found = _body(item) if problem is None else None
            if found is None:
                problems.append(f"{path}:{position}: {problem or 'no messages list or input; skipped'}")
            else:
                bodies.append(Recorded(path.name, position, found[1], protocol=found[0]))
    return Reading(longest_per_conversation(bodies), len(bodies), problems)


def _items(text: str) -> Iterator[tuple[int, Any, str | None]]:
    if text.lstrip().startswith("["):
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            yield 1, None, f"invalid JSON: {exc}"
            return
        for index, item in enumerate(items, 1):
            yield index, item, None
        return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, orjson.loads(line), None
        except orjson.JSONDecodeError as exc:
            yield number, None, f"invalid JSON: {exc}"


def _body(item: Any) -> tuple[str, dict[str, Any]] | None:
    """(protocol, body) of a recorded item, bare or wrapped."""
    if not isinstance(item, dict):
        return None
    for candidate in (item, *(item.get(key) for key in _WRAPPERS)):
        protocol = _protocol(candidate)
        if protocol is not None and isinstance(candidate, dict):  # only a dict names a protocol
            return protocol, candidate
    return None


def _protocol(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    kind = reader_of(body)
    return kind.name if kind is not None else None


def longest_per_conversation(bodies: list[Recorded]) -> list[Recorded]:
    """Drop every body whose messages are a prefix of a longer kept one (same conversation,
    earlier step); counts them on the kept one. Input order is kept."""
    chains = [_prefix_hashes(r.messages) for r in bodies]
    owner: dict[bytes, int] = {}  # prefix hash -> index of the kept body it belongs to
    kept: list[int] = []
    for index in sorted(range(len(bodies)), key=lambda i: -len(chains[i])):
        full = chains[index][-1]
        if full in owner:
            bodies[owner[full]].requests += 1
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
