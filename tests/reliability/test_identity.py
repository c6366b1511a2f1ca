"""Tenants cannot touch each other's sessions, and only trusted clients pick a policy override."""

from __future__ import annotations

import hashlib

import openai
from support.agent import Agent
from support.guarded import guarded
from support.looping import stubborn
from support.policies import ladder_policy
from support.seen import anchors, observations
from support.upstream import Reply

SESSION = {"x-loopguard-session": "run-1"}
LENIENT = ladder_policy("""
agents:
  - id: lenient
    match: {header: lenient}
    detectors: {no_progress: {enabled: false}}
""")


def _stops_when_refused(request: dict) -> Reply:
    """Repeats its call until the last message is LoopGuard's refusal of it, then answers."""
    last = request["messages"][-1]
    if last.get("role") == "tool" and str(last.get("content", "")).startswith("[loopguard]"):
        return Reply(content="done")
    return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])


def _seen(g, index: int = -1) -> dict:
    return g.upstream.requests[index]["json"]


def _client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=10)


def test_two_keys_with_the_same_session_id_share_nothing(tmp_path):
    with guarded(_stops_when_refused, tmp_path) as g:
        a = Agent(_client(g.url, "sk-tenant-a"), headers=SESSION)
        assert a.run("read a.txt") == "done"  # the 4th identical call was vetoed and remembered
        assert observations(_seen(g))
        # Tenant B replays the same history under the same session id (and the same `user`).
        for key, shown in (("sk-tenant-b", False), ("sk-tenant-a", True)):
            first = len(g.upstream.requests)  # what the upstream got first for this request
            Agent(_client(g.url, key), headers=SESSION, messages=list(a.messages))._step()
            assert bool(observations(_seen(g, first))) is shown  # A's vetoed call: A's alone


def test_agent_header_selects_an_override_only_for_allowed_keys(tmp_path):
    trusted = "sk-trusted-ops"
    auth = {"agent_header_keys": ["sha256:" + hashlib.sha256(trusted.encode()).hexdigest()]}
    with guarded(stubborn(), tmp_path, LENIENT, auth=auth) as g:
        for key, guarded_run in (("sk-anyone", True), (trusted, False)):
            first = len(g.upstream.requests)
            agent = Agent(_client(g.url, key), headers={"x-loopguard-agent": "lenient", "x-loopguard-session": key})
            agent.run("read a.txt", max_steps=4)  # the 4th request carries 3 identical calls
            warned = any(anchors(r["json"]) for r in g.upstream.requests[first:])
            assert warned is guarded_run  # only the trusted key's header selected the override
