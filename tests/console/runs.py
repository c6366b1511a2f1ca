"""Looping runs through a real gateway as a given client key, and reading the console as one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from support.agent import TOOLS
from support.redis_server import RedisServer
from support.waiting import wait_for


def loop_as(url: str, key: str, session: str | bytes, turns: int = 12) -> list[str]:
    """A stubborn agent's run (the test model loops on read_file) with ``key``; the session
    header may be raw bytes (UTF-8 as a client sends it). Returns each answer's action."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "summarize a.txt"}]
    actions = []
    headers = {"authorization": f"Bearer {key}", "x-loopguard-session": session}
    with httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(turns):
            answer = http.post(
                "/v1/chat/completions",
                json={"model": "test-model", "messages": messages, "tools": TOOLS},
                headers=headers,
            )
            actions.append(answer.headers.get("x-loopguard-action", ""))
            if answer.status_code != 200:
                break
            message = answer.json()["choices"][0]["message"]
            calls = message.get("tool_calls") or []
            if not calls:
                break
            messages.append(message)
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": "contents of a.txt"} for c in calls]
    return actions


def feed(url: str, key: str) -> dict[str, Any]:
    answer = httpx.get(url + "/ui/api/feed", headers={"authorization": f"Bearer {key}"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def shown(url: str, key: str, *sessions: str) -> dict[str, Any]:
    """The feed once every session's stop is in it (the console's sink writes off the request path)."""
    seen: dict[str, Any] = {}

    def ready() -> bool:
        seen.update(feed(url, key))
        stops = {e["session"] for e in seen["events"] if e["action"] == "terminate"}
        return all(any(s.endswith(session) for s in stops) for session in sessions)

    assert wait_for(ready, timeout=15), seen
    return seen


@contextmanager
def state(backend: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The ``state`` config of a backend: memory, or a real redis-server for the test."""
    if backend == "memory":
        yield {"backend": "memory"}
        return
    server = RedisServer(tmp_path).start()
    try:
        yield {"backend": "redis", "url": server.url, "key_prefix": "tenants:", "op_timeout_s": 5.0}
    finally:
        server.stop()
