"""The optional model judge through the real gateway: a scripted judge model (a real HTTP
upstream answering the judge's chat completion) is asked in the background when the cheap
detectors see something, and its verdict warns on the session's next request; a healthy run
never calls it; a low-confidence or failing judge changes nothing; its tokens are in /metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from support.agent import Agent
from support.looping import RespondingUpstream
from support.seen import anchors
from support.servers import serve
from support.upstream import Reply
from support.waiting import wait_for

from gateway.audit.memory_sink import MemorySink
from gateway.judge.prompt import SYSTEM

ROOT = Path(__file__).resolve().parents[2]
JUDGE_ON = """
  llm_judge:
    enabled: true
    after_rounds: 2
    min_interval: 2
    max_interval: 4
"""


def judge_policy(extra: str = JUDGE_ON) -> str:
    """The default policy with its llm_judge block replaced by ``extra``."""
    text = (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")
    start = text.index("  llm_judge:\n")
    end = text.index("\ninterventions:\n")
    return text[:start] + extra.lstrip("\n") + text[end:]


def is_judge(request: dict) -> bool:
    messages = request.get("messages") or []
    return bool(messages) and messages[0].get("content") == SYSTEM


def verdict(looping: bool = True, confidence: float = 0.95, reason: str = "it lists the same folder again") -> Reply:
    return Reply(content="Verdict:\n" + json.dumps({"looping": looping, "confidence": confidence, "reason": reason}))


def agent_model(calls: list[tuple[str, str]], judge: Reply | None = None):
    """The agent's model: ``calls`` in order, then an answer (an anchor read: "stopping");
    the judge's requests get ``judge``."""

    def respond(request: dict) -> Reply:
        if is_judge(request):
            return judge or verdict()
        if any(anchors({"messages": [m]}) for m in request["messages"][-1:]):
            return Reply(content="stopping: I was going in circles")
        done = sum(1 for m in request["messages"] if m.get("role") == "assistant")
        return Reply(tool_calls=[calls[done]]) if done < len(calls) else Reply(content="done")

    return respond


def checks(client, outcome: str) -> float:
    text = httpx.get(client.gateway_url + "/metrics").text
    found = re.search(rf'^loopguard_judge_checks_total\{{outcome="{outcome}"\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def tokens(client, kind: str) -> float:
    text = httpx.get(client.gateway_url + "/metrics").text
    found = re.search(rf'^loopguard_judge_tokens_total\{{kind="{kind}"\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def run(start_guarded, calls, judge=None, text=None, stream=False, after=None):
    upstream, client, _ = start_guarded(agent_model(calls, judge), text or judge_policy())
    events = MemorySink()
    client.gateway_app.state.gateway.audit.add(events)

    def tool(args: dict) -> str:
        if after is not None:
            after(client, args)
        return f"entries of {args.get('path')}: a.txt b.txt"

    agent = Agent(client, tools={"list_dir": tool, "read_file": lambda a: f"text of {a.get('path')}"}, stream=stream)
    answer = agent.run("tidy the folder", max_steps=12)
    return upstream, client, agent, events, answer


SAME = ("list_dir", '{"path": "."}')


def judged_once(client, args: dict) -> None:
    """The tool of the 3rd call waits until the background check has answered: the verdict is
    applied by the next request, and a test must not race the judge."""
    if args.get("path") == "docs":
        assert wait_for(
            lambda: checks(client, "looping") + checks(client, "clear") + checks(client, "failed") >= 1, timeout=30
        )


@pytest.mark.parametrize("stream", [False, True])
def test_a_confident_verdict_warns_on_the_next_request(start_guarded, stream):
    calls = [SAME, SAME, ("list_dir", '{"path": "docs"}'), ("read_file", '{"path": "a.txt"}')]
    upstream, client, agent, events, answer = run(start_guarded, calls, stream=stream, after=judged_once)

    judge_requests = [r["json"] for r in upstream.requests if is_judge(r["json"])]
    assert len(judge_requests) == 1  # asked once: at the 3rd request, where no_progress saw 2 alike
    shown = judge_requests[0]["messages"][1]["content"]
    assert "tidy the folder" in shown and shown.count('list_dir({"path": "."})') == 2
    assert answer == "stopping: I was going in circles"
    warned = [e for e in events.events if e.action == "warn"]
    assert [(e.detector, e.phase) for e in warned] == [("llm_judge", "request")]
    last = [r["json"] for r in upstream.requests if not is_judge(r["json"])][-1]
    assert any("it lists the same folder again" in a and "confidence 0.95" in a for a in anchors(last))
    assert checks(client, "looping") == 1
    assert tokens(client, "prompt") == 10 and tokens(client, "completion") == 5  # the scripted usage
    if not stream:
        assert agent.actions == ["pass", "pass", "pass", "warn"]


def test_a_healthy_run_never_calls_the_judge(start_guarded):
    calls = [("list_dir", f'{{"path": "dir{n}"}}') for n in range(6)] + [("read_file", '{"path": "a.txt"}')]
    upstream, client, _agent, events, answer = run(start_guarded, calls)
    assert answer == "done"
    assert not [r for r in upstream.requests if is_judge(r["json"])]
    assert not events.events and checks(client, "looping") == checks(client, "clear") == 0


def test_a_low_confidence_verdict_changes_nothing(start_guarded):
    calls = [SAME, SAME, ("list_dir", '{"path": "docs"}'), ("read_file", '{"path": "a.txt"}')]
    _upstream, client, agent, events, answer = run(
        start_guarded, calls, judge=verdict(confidence=0.6), after=judged_once
    )
    assert answer == "done"
    assert checks(client, "looping") == 1 and not events.events
    assert agent.actions == ["pass"] * 5


def test_a_failing_judge_is_logged_and_counted_and_traffic_goes_on(start_guarded):
    calls = [SAME, SAME, ("list_dir", '{"path": "docs"}'), ("read_file", '{"path": "a.txt"}')]
    broken = Reply(status=500, error={"message": "judge down", "type": "server_error"})
    _upstream, client, _agent, events, answer = run(start_guarded, calls, judge=broken, after=judged_once)
    assert answer == "done"
    assert checks(client, "failed") == 1 and not events.events


def test_the_judge_at_its_own_base_url_gets_its_own_key_never_the_clients(start_guarded, monkeypatch):
    judge = RespondingUpstream(lambda request: verdict(reason="the same listing, over and over"))
    with serve(judge.app) as judge_url:
        monkeypatch.setenv("JUDGE_TEST_KEY", "sk-judge-only")
        extra = JUDGE_ON + f"    base_url: {judge_url}/v1\n    api_key_env: JUDGE_TEST_KEY\n    model: judge-mini\n"
        calls = [SAME, SAME, ("list_dir", '{"path": "docs"}'), ("read_file", '{"path": "a.txt"}')]
        upstream, _client, _agent, _events, answer = run(
            start_guarded, calls, text=judge_policy(extra), after=judged_once
        )
    assert answer == "stopping: I was going in circles"
    assert not [r for r in upstream.requests if is_judge(r["json"])]  # the agent's upstream saw no check
    (asked,) = judge.requests
    assert asked["json"]["model"] == "judge-mini"
    assert asked["headers"]["authorization"] == "Bearer sk-judge-only"
