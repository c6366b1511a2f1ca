"""The session logs the pinned clients wrote (tests/fixtures/sessions, made by its
make_sessions.py), found by client and script, and small builders for logs in the shapes the
clients wrote before, which no pinned client writes any more."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.replay.logs import Source, read_source

SESSIONS = Path(__file__).parents[1] / "fixtures" / "sessions"
WIRE = json.loads((SESSIONS / "wire.json").read_text())
LOGS = {
    "claude_code": "*.jsonl",
    "codex": "rollout-*.jsonl",
    "gemini_cli": "session-*.jsonl",
    "cline": "*.messages.json",
}


def session_log(client: str, script: str) -> Path:
    """The main log ``client`` wrote running the ``loop``, ``healthy`` (or for Claude Code
    ``compacted-loop``) script: each names its work folder, ``/tmp/lg-sessions/<client>-<script>/``,
    in its records."""
    marker = f"/{client.split('_')[0]}-{script}/"
    found = [
        p
        for p in sorted((SESSIONS / client).rglob(LOGS[client]))
        if "subagents" not in p.parts and marker in p.read_text()
    ]
    assert len(found) == 1, (client, script, found)
    return found[0]


def wire_calls(path: Path) -> list[list[Any]]:
    """What the client's last request really carried: [name, arguments, result] per call."""
    return WIRE[path.relative_to(SESSIONS).as_posix()]


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def home_with_sessions(home: Path) -> Path:
    """A home folder holding the fixtures where each client keeps them (~/.claude/projects,
    ~/.codex/sessions, ~/.gemini/tmp, ~/.cline/data/sessions)."""
    layout = {
        "claude_code": ".claude",
        "codex": ".codex",
        "gemini_cli": ".gemini",
        "cline": ".cline",
    }
    for client, where in layout.items():
        shutil.copytree(SESSIONS / client, home / where, dirs_exist_ok=True)
    return home


class ClaudeLog:
    """A Claude Code session file in the shape its records have (``type``, ``uuid``,
    ``parentUuid``, ``sessionId``, ``message``), written turn by turn."""

    def __init__(self, session: str = "11111111-2222-3333-4444-555555555555", sidechain: bool = False) -> None:
        self.session, self.sidechain = session, sidechain
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None
        self._n = 0

    def _next(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n:04d}"

    def record(self, kind: str, message: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        uuid = self._next("uuid-")
        record = {"parentUuid": self.last, "isSidechain": self.sidechain, "type": kind, "uuid": uuid}
        record.update(sessionId=self.session, **extra)
        if message is not None:
            record["message"] = message
        self.records.append(record)
        self.last = uuid
        return record

    def user(self, text: str, **extra: Any) -> dict[str, Any]:
        return self.record("user", {"role": "user", "content": text}, **extra)

    def calls(self, *calls: tuple[str, dict[str, Any], str], error: bool = False) -> None:
        """One reply making ``calls`` (name, input, result), written as Claude Code writes a
        streamed reply: a record per tool use, then a record per result."""
        reply, ids = self._next("msg_"), []
        for name, arguments, _ in calls:
            ids.append(self._next("toolu_"))
            block = {"type": "tool_use", "id": ids[-1], "name": name, "input": arguments}
            self.record(
                "assistant", {"id": reply, "role": "assistant", "model": "claude-sonnet-4-5", "content": [block]}
            )
        for ident, (_, _, result) in zip(ids, calls, strict=True):
            block = {"type": "tool_result", "tool_use_id": ident, "content": result, "is_error": error}
            self.record("user", {"role": "user", "content": [block]})

    def call(self, name: str, arguments: dict[str, Any], result: str, error: bool = False) -> None:
        self.calls((name, arguments, result), error=error)

    def say(self, text: str) -> None:
        reply = {"id": self._next("msg_"), "role": "assistant", "model": "claude-sonnet-4-5"}
        self.record("assistant", {**reply, "content": [{"type": "text", "text": text}]})

    def compact(self, summary: str) -> None:
        """A compaction: a boundary that starts a new chain, pointing back at the old one."""
        before, self.last = self.last, None
        self.record("system", subtype="compact_boundary", logicalParentUuid=before, content="Conversation compacted")
        self.user(summary, isCompactSummary=True)

    def write(self, path: Path) -> Path:
        return write_jsonl(path, self.records)


def calls_of(segment: Any, parse: Callable[[str], Any] = json.loads) -> list[list[Any]]:
    """A replayed run's calls as ``[name, arguments, result]``, as ``wire_calls`` reads a CLI's
    own requests."""
    conv = segment.conversation()
    results = {t.tool_call_id: t.text for t in conv.turns if t.role == "tool"}
    return [[c.name, parse(c.arguments), results.get(c.id)] for t in conv.turns for c in t.tool_calls]


def read(path: Path) -> list[Any]:
    """The runs ``loopguard replay`` reads from one log file."""
    return read_source(Source(path, path.name))
