"""LoopGuard's guardrail inside a real LiteLLM proxy, driven by an openai-SDK agent."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.agent import Agent
from support.litellm_proxy import MASTER_KEY
from support.waiting import wait_for

from .conftest import HEALTHY

pytestmark = pytest.mark.litellm_proxy


def sent_for(upstream, prompt: str) -> list[dict]:
    """The requests of one conversation, as the proxy forwarded them to the model."""
    return [r["json"] for r in upstream.requests if isinstance(r["json"], dict)
            and any(m.get("content") == prompt for m in r["json"].get("messages", []))]


def from_loopguard(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"]
            if isinstance(m.get("content"), str) and m["content"].lower().startswith("[loopguard]")]


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_looping_agent_is_warned_vetoed_and_ended(client, upstream, stream):
    prompt = f"summarise a.txt ({'stream' if stream else 'unary'})"
    agent = Agent(client, tools={"read_file": lambda a: "the same text"}, stream=stream)
    answer = agent.run(prompt)

    # Three executions, then the run ends on a normal answer the framework accepts.
    assert agent.executions["read_file"] == 3
    assert answer.startswith("[LoopGuard] This run was stopped") and "no progress" in answer
    assert agent.finish_reasons == ["tool_calls"] * 3 + ["stop"]
    sent = sent_for(upstream, prompt)
    assert len(sent) == 5  # four steps, and one re-ask
    # warned: the fourth step reached the model with the anchor after what the agent sent
    fourth = sent[3]["messages"]
    assert len(fourth) == 8 and fourth[-1]["role"] == "system" and fourth[-1]["content"].startswith("[LoopGuard]")
    # vetoed: the fourth call was never executed; the model was asked again with it and the
    # error observation in its history, insisted, and the run was ended
    reask = sent[4]["messages"]
    assert reask[:8] == fourth and reask[-2]["tool_calls"][0]["function"]["name"] == "read_file"
    assert reask[-1]["role"] == "tool" and reask[-1]["content"].startswith("[loopguard]")
    # the client's history holds only the three executed calls and the final answer
    assert [m["role"] for m in agent.messages] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]


def test_savings_show_up_in_litellms_metrics(client, proxy):
    Agent(client, tools={"read_file": lambda a: "the same text"}).run("summarise d.txt")
    # LiteLLM's /metrics (its prometheus callback) serves LoopGuard's counters too
    assert wait_for(lambda: saved_tokens(proxy.url) > 0, timeout=30)


def saved_tokens(url: str) -> float:
    text = httpx.get(url + "/metrics/", headers={"Authorization": f"Bearer {MASTER_KEY}"}).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "loopguard_tokens_saved_total" and sample.labels.get("model") == "test-model":
                return sample.value
    return 0.0


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_healthy_agent_is_untouched(client, upstream, stream):
    prompt = f"{HEALTHY} read three files ({'stream' if stream else 'unary'})"
    agent = Agent(client, stream=stream)
    answer = agent.run(prompt)

    assert answer == "All three files read." and agent.executions["read_file"] == 3
    sent = sent_for(upstream, prompt)
    assert len(sent) == 4  # one request per step: nothing vetoed, nothing re-asked
    for request in sent:
        assert not from_loopguard(request)
    # the model saw what the agent sent, message for message
    assert [(m["role"], m.get("content") or "") for m in sent[-1]["messages"]] == [
        (m["role"], m.get("content") or "") for m in agent.messages[:-1]]
