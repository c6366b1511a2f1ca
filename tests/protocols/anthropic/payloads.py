"""Realistic Messages request bodies, shaped like what Claude-Code-style agents send."""

from __future__ import annotations

import copy
from typing import Any

SYSTEM_BLOCKS = [
    {"type": "text", "text": "You are a coding agent working in /repo."},
    {"type": "text", "text": "Use the tools to inspect files before editing.", "cache_control": {"type": "ephemeral"}},
]
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "grep",
        "description": "Search files",
        "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}},
    },
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    {"type": "bash_20250124", "name": "bash"},
]


def _use(ident: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": args}


def _result(ident: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": ident, "content": content, **extra}


MESSAGES = [
    {"role": "user", "content": "Find the TODOs in src and fix the first one."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Search first.", "signature": "EqQBCgIYAh"},
            {"type": "text", "text": "I'll search for TODOs."},
            _use("toolu_01A", "grep", pattern="TODO"),
        ],
    },
    {"role": "user", "content": [_result("toolu_01A", "src/app.py:12: # TODO: handle None")]},
    {
        "role": "assistant",
        "content": [
            _use("toolu_01B", "read_file", path="src/app.py"),
            _use("toolu_01C", "read_file", path="src/util.py"),
        ],
    },
    {
        "role": "user",
        "content": [
            _result("toolu_01B", [{"type": "text", "text": "def main():"}, {"type": "text", "text": "    pass"}]),
            _result("toolu_01C", "No such file: src/util.py", is_error=True),
            {"type": "text", "text": "<system-reminder>Todo list is empty.</system-reminder>"},
        ],
    },
]


def body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "system": copy.deepcopy(SYSTEM_BLOCKS),
        "tools": copy.deepcopy(TOOLS),
        "messages": copy.deepcopy(MESSAGES),
        **extra,
    }
