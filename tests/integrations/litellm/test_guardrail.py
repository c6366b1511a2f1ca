"""LoopGuard's guardrail inside a real LiteLLM proxy, driven by an openai-SDK agent."""

from __future__ import annotations

import anthropic
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.agent import TOOLS, Agent
from support.claude_agent import ClaudeAgent
from support.litellm_proxy import MASTER_KEY
from support.responses_agent import ResponsesAgent
from support.waiting import wait_for

from .conftest import CHATTY, CLAUDE_FINAL, FINAL, HEALTHY, SAYING, TWO_ANSWERS, sdk

pytestmark = pytest.mark.litellm_proxy


def sent_for(upstream, prompt: str) -> list[dict]:
    """The requests of one conversation, as the proxy forwarded them to the model."""
    return [
        r["json"]
        for r in upstream.requests
        if isinstance(r["json"], dict) and any(m.get("content") == prompt for m in r["json"].get("messages", []))
    ]


def from_loopguard(request: dict) -> list[str]:
    return [
        m["content"]
        for m in request["messages"]
        if isinstance(m.get("content"), str) and m["content"].lower().startswith("[loopguard]")
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_looping_agent_is_warned_vetoed_and_ended_with_the_models_own_answer(client, upstream, stream):
    prompt = f"summarise a.txt ({'stream' if stream else 'unary'})"
    agent = Agent(client, tools={"read_file": lambda a: "the same text"}, stream=stream)
    answer = agent.run(prompt)

    # Three executions, then the run ends on the model's own answer, written with tools closed.
    assert agent.executions["read_file"] == 3
    assert answer == FINAL
    assert agent.finish_reasons == ["tool_calls"] * 3 + ["stop"]
    sent = sent_for(upstream, prompt)
    assert len(sent) == 6  # four steps, one re-ask, and the call for the final answer
    final = sent[5]
    assert final["tool_choice"] == "none" and from_loopguard(final)  # tools closed, the loop's note in front
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


def test_a_streamed_stop_reads_like_the_non_streamed_one(client):
    """From the warned step on, a round's words are held with its calls: the refused round's
    "Let me read a.txt again." never reaches the streaming client, as it never reaches the
    non-streaming one."""
    runs = {}
    for stream in (False, True):
        agent = Agent(client, tools={"read_file": lambda a: "the same text"}, stream=stream)
        agent.run(f"{CHATTY} summarise a.txt ({'stream' if stream else 'unary'})")
        runs[stream] = [m["content"] for m in agent.messages if m["role"] == "assistant" and m.get("content")]
    assert runs[True] == runs[False]
    assert runs[True] == [SAYING] * 3 + [FINAL]  # the executed steps' words, then the answer


def test_savings_show_up_in_litellms_metrics(client, proxy):
    Agent(client, tools={"read_file": lambda a: "the same text"}).run("summarise d.txt")
    # LiteLLM's /metrics (its prometheus callback) serves LoopGuard's counters too
    assert wait_for(lambda: saved_tokens(proxy.url) > 0, timeout=30)


def saved_tokens(url: str) -> float:
    # A busy proxy can take longer than httpx's 5 s default to render its first /metrics page.
    text = httpx.get(url + "/metrics/", headers={"Authorization": f"Bearer {MASTER_KEY}"}, timeout=60).text
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
        (m["role"], m.get("content") or "") for m in agent.messages[:-1]
    ]


@pytest.mark.parametrize("mode", ["unary"])
def test_a_looping_responses_agent_is_ended_with_the_models_own_answer(proxy, responses_upstream, mode):
    """``/v1/responses`` through the proxy (the Agents SDK's default API): judged as the gateway
    judges it, ended by the model's answer with tools closed."""
    client = sdk(proxy)
    agent = ResponsesAgent(client, tools={"read_file": lambda a: "the same text"}, mode=mode)
    answer = agent.run(f"summarise a.txt (responses {mode})")

    # warned at the fourth step, its call vetoed, re-asked, insisted: three executions
    assert agent.executions["read_file"] == 3
    assert answer == "I will stop calling tools now."  # the model's own answer (its tools closed)
    sent = [r["json"] for r in responses_upstream.requests if r["path"] == "/v1/responses"]
    assert len(sent) == 6  # four steps, one re-ask, and the call for the final answer
    assert sent[-1]["tool_choice"] == "none" and "[loopguard]" in str(sent[-1]["input"]).lower()


def litellm_metric(url: str, name: str) -> float:
    """The sum of one of LiteLLM's own metrics over the master key's series."""
    # A busy proxy can take longer than httpx's 5 s default to render its first /metrics page.
    text = httpx.get(url + "/metrics/", headers={"Authorization": f"Bearer {MASTER_KEY}"}, timeout=60).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and sample.labels.get("hashed_api_key") == "litellm_proxy_master_key"
    )


def test_reasks_and_final_answers_are_in_litellms_spend(client, proxy, upstream):
    """The guardrail's own calls (the re-ask, the final answer) go through LiteLLM's router as
    the client's key: LiteLLM counts and prices them like the agent's own."""
    before = litellm_metric(proxy.url, "litellm_requests_metric_total")
    spent = litellm_metric(proxy.url, "litellm_spend_metric_total")
    prompt = "summarise spend.txt"
    Agent(client, tools={"read_file": lambda a: "the same text"}).run(prompt)
    calls = len(sent_for(upstream, prompt))
    assert calls == 6  # four steps, one re-ask, one final answer
    assert wait_for(lambda: litellm_metric(proxy.url, "litellm_requests_metric_total") - before == calls, timeout=30)
    assert litellm_metric(proxy.url, "litellm_spend_metric_total") > spent


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_looping_claude_agent_on_messages_is_ended_with_the_models_own_answer(proxy, anthropic_upstream, stream):
    """``/v1/messages`` through the proxy (LiteLLM's ``anthropic_messages`` call type). A stream's
    proposed calls are not judged (only its history is): it ends at the terminate threshold."""
    client = anthropic.Anthropic(base_url=proxy.url, api_key=MASTER_KEY, max_retries=0, timeout=60)
    agent = ClaudeAgent(client, results={"read_file": "the same text"}, stream=stream)
    answer = agent.run(f"summarise a.txt (messages, {'stream' if stream else 'unary'})")

    assert agent.executions["read_file"] == (5 if stream else 3)
    assert answer == CLAUDE_FINAL
    final = anthropic_upstream.requests[-1]["json"]
    assert final["tool_choice"] == {"type": "none"} and "[loopguard]" in str(final["messages"]).lower()


def test_a_looping_streamed_responses_agent_is_ended_with_the_models_own_answer(proxy, responses_upstream):
    client = sdk(proxy)
    agent = ResponsesAgent(client, tools={"read_file": lambda a: "the same text"}, mode="stream")
    answer = agent.run("summarise a.txt (responses stream)")

    assert agent.executions["read_file"] == 3
    assert answer == "I will stop calling tools now."


def test_each_of_several_answers_is_judged_on_its_own(client):
    """``n=2``: the answer repeating the loop's call loses it (vetoed), the other keeps its own,
    as the gateway decides (no re-ask: an answer still goes to the agent)."""
    call = {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
    messages = [{"role": "user", "content": TWO_ANSWERS + " summarise a.txt"}]
    for n in range(3):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [{**call, "id": f"c{n}"}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "the same text"},
        ]
    completion = client.chat.completions.create(model="test-model", messages=messages, n=2, tools=TOOLS)
    first, second = (choice.message for choice in completion.choices)
    assert not first.tool_calls
    assert [c.function.name for c in second.tool_calls] == ["list_dir"]


def test_litellms_metrics_serve_loopguards_counters_from_the_start(proxy):
    text = httpx.get(proxy.url + "/metrics/", headers={"Authorization": f"Bearer {MASTER_KEY}"}, timeout=30).text
    names = {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}
    for name in (
        "loopguard_interventions_total",
        "loopguard_warn_outcomes_total",
        "loopguard_tokens_saved_total",
        "loopguard_cost_saved_usd_total",
        "loopguard_detector_errors_total",
        "loopguard_audit_sink_errors_total",
        "loopguard_fail_open_errors_total",
    ):
        assert name in names
