"""Claude Code sessions: ``~/.claude/projects/<project>/<session>.jsonl``, replayed as Anthropic
Messages requests.

Each line is a record; ``user`` and ``assistant`` records carry the message as it went to the API
(``message``), linked by ``uuid`` / ``parentUuid``. The conversation is the chain from the last
message back to the start, so abandoned branches (an edited prompt, a retry) are left out; the
results of parallel tool uses hang off the calls they answer, beside the chain, and are read with
them. A streamed reply is written one record per content block, all with the reply's
``message.id``: they are one message again, and so are the results that answer it. A compaction
starts a new chain (a ``compact_boundary`` pointing back with ``logicalParentUuid``, or in older
versions a root ``isCompactSummary`` message): each is a segment of its own, judged in one session.

Sub-agents are runs of their own: ``<session>/subagents/agent-<id>.jsonl`` (every record
``isSidechain``), or in older versions side chains inside the session file. The system prompt and
tools come from the latest ``api-request-shape`` record where the version writes one; otherwise
the replay reads the run through the Claude Code profile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gateway.replay.logs.base import Format, LogError, Source
from gateway.replay.run import Run, Segment

Record = dict[str, Any]
_MESSAGES = ("user", "assistant")


def claims(source: Source) -> bool:
    if source.is_dir or not source.name.endswith(".jsonl"):
        return False
    first = next((r for r in source.head_dicts(16) if r.get("type") in _MESSAGES), None)
    return first is not None and "sessionId" in first and isinstance(first.get("message"), dict)


def read(source: Source) -> list[Run]:
    records = [r for _, r in source.dicts()]
    if not records:
        raise LogError("no records in it")
    subagent = source.name.startswith("agent-")
    groups = [records] if subagent else _groups(records)
    runs = []
    for number, group in enumerate(groups):
        run = _run(source, group, subagent, number)
        if run is not None:
            runs.append(run)
    if not runs:
        raise LogError("no conversation in it")
    return runs


def _groups(records: list[Record]) -> list[list[Record]]:
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


def _run(source: Source, group: list[Record], subagent: bool, number: int) -> Run | None:
    chains = _chains(group)
    shape = _shape(group)
    segments = [Segment(_body(chain, shape), "anthropic") for chain in chains]
    segments = [s for s in segments if s.messages]
    if not segments:
        return None
    first = next(r for r in group if r.get("type") in _MESSAGES)
    session = str(first.get("sessionId") or source.rel)
    agent = first.get("agentId")
    if subagent or number:
        ident = str(agent) if agent else f"{session}#sidechain-{number}"
        path = source.rel if subagent else f"{source.rel}#sidechain-{number}"
    else:
        ident, path = session, source.rel
    return Run(path, ident, "claude_code", segments, file=str(source.path), profile="claude_code", session=ident)


def _chains(group: list[Record]) -> list[list[Record]]:
    """The messages of each segment, oldest segment first, each in file order."""
    position = {id(r): i for i, r in enumerate(group)}
    by_uuid = {r["uuid"]: r for r in group if isinstance(r.get("uuid"), str)}
    messages = [r for r in group if r.get("type") in _MESSAGES and isinstance(r.get("message"), dict)]
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


def _shape(group: list[Record]) -> dict[str, Any]:
    """The latest request shape (system prompt, tools) this version recorded for the run."""
    agent = next((r.get("agentId") for r in group if r.get("agentId")), None)
    found: dict[str, Any] = {}
    for record in group:
        if record.get("type") == "api-request-shape" and record.get("agentId") == agent:
            shape = record.get("shape")
            found = shape if isinstance(shape, dict) else found
    return found


def _body(chain: list[Record], shape: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    by_reply: dict[str, dict[str, Any]] = {}  # a streamed reply's message.id -> its message
    answers: dict[str, dict[str, Any]] = {}  # tool_use id -> the user message holding its result
    model = ""
    for record in chain:
        message = record["message"]
        role, content = message.get("role"), _as_blocks(message.get("content"))
        if role == "assistant":
            if message.get("model") == "<synthetic>":
                continue  # the CLI's own error notice: never sent by the model
            model = message.get("model") or model
            reply = by_reply.get(str(message.get("id")))
            if reply is None:
                reply = {"role": "assistant", "content": []}
                messages.append(reply)
                if message.get("id"):
                    by_reply[str(message["id"])] = reply
            reply["content"] += content
            continue
        _add_user(messages, answers, content)
    body: dict[str, Any] = {"model": model, "messages": messages}
    if shape.get("system"):
        body["system"] = shape["system"]
    if isinstance(shape.get("tools"), list):
        body["tools"] = shape["tools"]
    return body


def _add_user(messages: list[dict[str, Any]], answers: dict[str, dict[str, Any]], content: list[Any]) -> None:
    """A user record: results join the message answering their call's reply (the API wants all
    of one reply's results in the message after it); other text joins the user message before."""
    answered = [b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    target = answers.get(str(answered[0])) if answered else None
    if target is None and answered:
        target = _after_call(messages, answered[0])
    if target is None and messages and messages[-1]["role"] == "user":
        target = messages[-1]
    if target is None:
        target = {"role": "user", "content": []}
        messages.append(target)
    target["content"] += content
    for ident in answered:
        answers[str(ident)] = target


def _after_call(messages: list[dict[str, Any]], call: Any) -> dict[str, Any] | None:
    """The user message right after the reply that made ``call`` (added when there is none)."""
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and any(
            isinstance(b, dict) and b.get("id") == call for b in message["content"]
        ):
            if index + 1 < len(messages) and messages[index + 1]["role"] == "user":
                return messages[index + 1]
            messages.insert(index + 1, {"role": "user", "content": []})
            return messages[index + 1]
    return None


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content}] if isinstance(content, str) and content else []


FORMAT = Format(
    "claude_code",
    "Claude Code",
    "~/.claude/projects/<project>/<session>.jsonl, sub-agents in <session>/subagents/agent-*.jsonl "
    "(CLAUDE_CONFIG_DIR moves ~/.claude)",
    claims,
    read,
)
