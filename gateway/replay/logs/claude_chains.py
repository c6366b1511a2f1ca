"""Claude Code's records as conversations: which records are one run, and which of a run's
messages its requests carried.

Records link to their parent (``parentUuid``). The main chain's records and each side chain's
(``isSidechain``) are runs of their own. A run's conversation is the chain from its last message
back to the start, so an abandoned branch (a rewound prompt, a retry) is left out; the results of
parallel tool uses hang off the calls they answer, beside the chain, and are taken with them. A
compaction ends a chain: its boundary points back (``logicalParentUuid``) at the conversation
before it, which is read the same way, as an earlier segment.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Record = dict[str, Any]
MESSAGES = ("user", "assistant")


def groups(records: list[Record]) -> list[list[Record]]:
    """The main chain's records, then each side chain's (older versions wrote sub-agents into
    the session file, ``isSidechain``), in order of appearance."""
    main = [r for r in records if not r.get("isSidechain")]
    sides: dict[str, list[Record]] = {}
    by_uuid = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    for record in records:
        if record.get("isSidechain"):
            sides.setdefault(_root(record, by_uuid), []).append(record)
    return [main, *sides.values()]


def _root(record: Record, by_uuid: dict[str, Record]) -> str:
    seen = 0
    while record.get("parentUuid") in by_uuid and seen < 100_000:
        record, seen = by_uuid[record["parentUuid"]], seen + 1
    return str(record.get("uuid", ""))


def chains(group: list[Record]) -> list[list[Record]]:
    """The messages of each segment, oldest segment first, each in file order."""
    position = {id(r): i for i, r in enumerate(group)}
    by_uuid = {r["uuid"]: r for r in group if isinstance(r.get("uuid"), str)}
    messages = [r for r in group if r.get("type") in MESSAGES and isinstance(r.get("message"), dict)]
    if not by_uuid or not messages:
        return [messages]
    chains: list[list[Record]] = []
    limit = len(group)
    while True:
        leaf = next((r for r in reversed(messages) if position[id(r)] < limit), None)
        if leaf is None:
            break
        on_path, root = _walk(leaf, by_uuid)
        if on_path is None:  # a chain that loops: read the file in order instead
            return [messages]
        chains.append(_with_parallel_results(messages, on_path, position[id(root)], limit, position))
        back = by_uuid.get(root.get("logicalParentUuid") or "")
        limit = position[id(back)] + 1 if back is not None else position[id(root)]
    return [c for c in reversed(chains) if c]


def _walk(leaf: Record, by_uuid: dict[str, Record]) -> tuple[set[str] | None, Record]:
    on_path: set[str] = set()
    record = leaf
    while True:
        uuid = record.get("uuid")
        if uuid in on_path:
            return None, record
        if isinstance(uuid, str):
            on_path.add(uuid)
        parent = by_uuid.get(record.get("parentUuid") or "")
        if parent is None:
            return on_path, record
        record = parent


def _with_parallel_results(
    messages: list[Record], on_path: set[str], start: int, limit: int, position: dict[int, int]
) -> list[Record]:
    """The chain's messages, with the tool results that answer its calls beside the chain."""
    chosen = [r for r in messages if r.get("uuid") in on_path]
    calls = {b.get("id") for r in chosen if r["message"].get("role") == "assistant" for b in _blocks(r, "tool_use")}
    for record in messages:
        if record.get("uuid") in on_path or not start <= position[id(record)] < limit:
            continue
        answered = [b.get("tool_use_id") for b in _blocks(record, "tool_result")]
        if answered and all(a in calls for a in answered):
            chosen.append(record)
    return sorted(chosen, key=lambda r: position[id(r)])


def _blocks(record: Record, kind: str) -> Iterable[dict[str, Any]]:
    content = record["message"].get("content")
    return (b for b in content if isinstance(b, dict) and b.get("type") == kind) if isinstance(content, list) else ()
