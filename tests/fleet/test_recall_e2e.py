"""The same loop in the next run, through a real gateway and the openai SDK: a run stopped for a
loop is remembered for its agent (client key, agent header, first request); the agent's next run,
in a new session, is warned at its first repeat of that loop, naming the earlier stop. Another
task, or another agent, is never told."""

from __future__ import annotations

import openai
from support.agent import Agent
from support.guarded import guarded
from support.looping import stubborn

RECALL = "An earlier run of this agent was stopped"


def run(url: str, session: str, task: str, agent: str = "crawler", steps: int = 8) -> Agent:
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
    runner = Agent(client, headers={"x-loopguard-session": session, "x-loopguard-agent": agent})
    runner.messages.append({"role": "system", "content": "You are a coding agent."})
    runner.run(task, max_steps=steps)
    return runner


def recalls(upstream, session_task: str) -> list[tuple[int, str]]:
    """(tool results in the request, the recall anchor) for each request of the task's run."""
    found = []
    for r in upstream.requests:
        messages = r["json"]["messages"]
        if messages[1]["content"] != session_task:
            continue
        for m in messages:
            if m["role"] == "system" and RECALL in str(m["content"]):
                found.append((sum(1 for x in messages if x["role"] == "tool"), m["content"]))
    return found


def test_a_new_run_repeating_the_loop_a_stopped_run_was_stopped_for_is_warned_at_its_first_repeat(tmp_path):
    with guarded(stubborn(), tmp_path) as g:
        first = run(g.url, "run-1", "read the config")
        assert "reject" in first.actions or "terminate" in first.actions  # the first run was stopped
        assert not recalls(g.upstream, "read the config")  # the first run itself is never "recalled"
        before = len(g.upstream.requests)

        second = run(g.url, "run-2", "read the config", steps=3)
        seen = recalls(g.upstream, "read the config")
        later = [r for r in g.upstream.requests[before:] if RECALL in str(r["json"]["messages"])]
        assert later, "the second run was not told"
        tools = [sum(1 for m in r["json"]["messages"] if m["role"] == "tool") for r in g.upstream.requests[before:]]
        first_told = next(i for i, r in enumerate(g.upstream.requests[before:]) if RECALL in str(r["json"]["messages"]))
        assert tools[first_told] == 2  # at its first repeat: the second identical call's result
        anchor = next(text for n, text in seen if RECALL in text)
        assert "read_file" in anchor and "minutes ago" in anchor
        assert second.actions[first_told] == "warn" and second.actions[:first_told] == ["pass"] * first_told

        before = len(g.upstream.requests)
        run(g.url, "run-3", "read the other config", steps=3)  # another first request: another agent run
        run(g.url, "run-4", "read the config", agent="someone-else", steps=3)  # another agent
        assert not any(RECALL in str(r["json"]["messages"]) for r in g.upstream.requests[before:])
