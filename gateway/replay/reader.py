"""Recorded traffic in: JSONL of request bodies (or a JSON list of them) of a guarded protocol:
chat completions (``{"messages": [...]}``), Anthropic Messages (``messages`` with a top-level
``system``, ``input_schema`` tools or ``tool_use`` / ``tool_result`` blocks) or the Responses API
(``{"input": ...}``). An agent
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

from gateway.protocols.anthropic.adapter import ANTHROPIC
from gateway.protocols.base import Adapter
from gateway.protocols.chat.adapter import CHAT
from gateway.protocols.responses import parse as responses
from gateway.protocols.responses.adapter import RESPONSES
from gateway.trace.model import Conversation

_WRAPPERS = ("body", "request")  # recorders often wrap the body: {"request": {...}, "response": ...}
ADAPTERS: dict[str, Adapter] = {"chat": CHAT, "responses": RESPONSES, "anthropic": ANTHROPIC}
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}


@dataclass(slots=True)
class Recorded:
    source: str  # file name
    position: int  # line (JSONL) or 1-based index (JSON list)
    body: dict[str, Any]
    requests: int = 1  # how many recorded bodies were this conversation
    protocol: str = "chat"  # a key of ADAPTERS

    @property
    def label(self) -> str:
        return f"{self.source}:{self.position}"

    @property
    def adapter(self) -> Adapter:
        """The protocol the body speaks."""
        return ADAPTERS[self.protocol]

    @property
    def path(self) -> str:
        """The route the body was sent to (policies may match on it)."""
        return PATHS[self.protocol]

    @property
    def messages(self) -> list[Any]:
        """The body's conversation items (chat or Anthropic messages, Responses input items)."""
        return self.adapter.items(self.body)

    def conversation(self) -> Conversation:
        """The body read in its own protocol."""
        return self.adapter.conversation(self.body, self.messages)


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
        if protocol is not None:
            return protocol, candidate
    return None


def _protocol(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("messages"), list) and body["messages"]:
        return "anthropic" if is_anthropic(body) else "chat"
    if "messages" not in body and responses.input_items(body):
        return "responses"
    return None


def is_anthropic(body: dict[str, Any]) -> bool:
    """An Anthropic Messages body: a top-level ``system``, tools declared with ``input_schema``,
    or ``tool_use`` / ``tool_result`` content blocks (chat bodies have none of these)."""
    if "system" in body:
        return True
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    return any(isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
               for m in body.get("messages", ()) if isinstance(m, dict) and isinstance(m.get("content"), list)
               for b in m["content"])


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
        running = hashlib.blake2b(running + orjson.dumps(message, option=orjson.OPT_SORT_KEYS),
                                  digest_size=16).digest()
        out.append(running)
    return out
