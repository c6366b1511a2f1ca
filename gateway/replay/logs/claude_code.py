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

from typing import Any

from gateway.replay.logs.base import Format, LogError, Source
from gateway.replay.logs.claude_chains import MESSAGES, Record, chains, groups
from gateway.replay.run import Run, Segment


def claims(source: Source) -> bool:
    if source.is_dir or not source.name.endswith(".jsonl"):
        return False
    first = next((r for r in source.head_dicts(16) if r.get("type") in MESSAGES), None)
    return first is not None and "sessionId" in first and isinstance(first.get("message"), dict)


def read(source: Source) -> list[Run]:
    records = [r for _, r in source.dicts()]
    if not records:
        raise LogError("no records in it")
    subagent = source.name.startswith("agent-")
    found = [records] if subagent else groups(records)
    runs = []
    for number, group in enumerate(found):
        run = _run(source, group, subagent, number)
        if run is not None:
            runs.append(run)
    if not runs:
        raise LogError("no conversation in it")
    return runs


def _run(source: Source, group: list[Record], subagent: bool, number: int) -> Run | None:
    segments_of = chains(group)
    shape = _shape(group)
    segments = [Segment(_body(chain, shape), "anthropic") for chain in segments_of]
    segments = [s for s in segments if s.messages]
    if not segments:
        return None
    first = next(r for r in group if r.get("type") in MESSAGES)
    session = str(first.get("sessionId") or source.rel)
    agent = first.get("agentId")
    if subagent or number:
        ident = str(agent) if agent else f"{session}#sidechain-{number}"
        path = source.rel if subagent else f"{source.rel}#sidechain-{number}"
    else:
        ident, path = session, source.rel
    return Run(path, ident, "claude_code", segments, file=str(source.path), profile="claude_code", session=ident)


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
