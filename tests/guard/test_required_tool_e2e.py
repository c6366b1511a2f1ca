"""End to end, the required-tool rule: a turn that requires the portfolio tool, through the real
gateway with the shipped example policy, a tool-executing agent over the openai SDK, streamed and
not: the corrective re-ask makes the model call the tool; a model that never does gets its final
answer with the warning in front; turns without an expectation are not touched."""

import httpx
import orjson
import pytest
from support.agent import Agent, declare
from support.policies import example_policy
from support.upstream import Reply

from gateway.protocols.streaming import HOLDING

MARK = "[loopguard]"
HOLDINGS = "| 代码 | 名称 | 持股 | 成本价 |\n| 600519 | 贵州茅台 | 100 | 1500 |"


def corrective(message: dict) -> bool:
    return message.get("role") == "user" and str(message.get("content", "")).startswith(MARK)


def forgetful(request: dict) -> Reply:
    """Guesses instead of calling the tool, until it is told to call it."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return Reply(content="你持有贵州茅台 100 股。")
    if corrective(last):
        return Reply(tool_calls=[("portfolio", '{"mode": "view"}')])
    return Reply(content="我猜你持有一些股票。")


def never_calls(request: dict) -> Reply:
    return Reply(content="你的持仓很健康。")


def agent_for(client, stream: bool) -> Agent:
    return Agent(client, tools={"portfolio": lambda args: HOLDINGS}, specs=declare("portfolio"), stream=stream)


@pytest.mark.parametrize("stream", [False, True])
def test_the_corrective_reask_makes_the_model_call_the_tool(start_guarded, stream):
    upstream, client, _ = start_guarded(forgetful, example_policy("portfolio"))
    agent = agent_for(client, stream)

    assert agent.run("我有什么持仓？") == "你持有贵州茅台 100 股。"

    assert agent.executions["portfolio"] == 1
    assert len(upstream.requests) == 3  # the guess, the re-ask, the answer after the tool ran
    reasked = upstream.requests[1]["json"]["messages"]
    assert reasked[-2] == {"role": "assistant", "content": "我猜你持有一些股票。"}
    assert corrective(reasked[-1]) and 'portfolio(mode="view")' in reasked[-1]["content"]
    # The agent saw neither the guess nor our corrective message: only the call and its answer.
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "tool", "assistant"]
    assert not any(corrective(m) for m in agent.messages)


@pytest.mark.parametrize("stream", [False, True])
def test_after_max_retries_the_answer_carries_the_warning(start_guarded, stream):
    upstream, client, _ = start_guarded(never_calls, example_policy("portfolio"))
    agent = agent_for(client, stream)

    answer = agent.run("帮我审一下持仓")

    assert len(upstream.requests) == 3  # the answer and max_retries (2) corrective re-asks
    last = upstream.requests[-1]["json"]["messages"]
    assert sum(corrective(m) for m in last) == 2
    assert answer.startswith("[LoopGuard 提醒]") and 'portfolio(mode="diagnose")' in answer
    assert answer.endswith("\n\n你的持仓很健康。")
    assert agent.finish_reasons == ["stop"]
    if not stream:
        assert agent.actions == ["reject"]  # the strongest action taken: answers were withheld


def test_the_held_stream_is_one_valid_stream(start_guarded):
    upstream, client, _ = start_guarded(never_calls, example_policy("portfolio"))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "持仓健康吗"}]}
    raw = httpx.post(client.gateway_url + "/v1/chat/completions", json=body, timeout=10).content

    chunks = [orjson.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: {")]
    assert raw.count(b"data: [DONE]") == 1 and raw.endswith(b"data: [DONE]\n\n")
    assert len({c["id"] for c in chunks}) == 1  # only the final attempt reached the client
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text.startswith("[LoopGuard 提醒]") and text.endswith("你的持仓很健康。")
    assert b": loopguard action=reject detector=required_tool" in raw
    assert len(upstream.requests) == 3


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "prompt",
    [
        "讲个笑话",
        "<relevant-memories>用户常问：我有什么持仓？</relevant-memories>讲个笑话",  # recalled, not typed
    ],
)
def test_turns_without_an_expectation_are_untouched(start_guarded, stream, prompt):
    upstream, client, _ = start_guarded(never_calls, example_policy("portfolio"))
    agent = agent_for(client, stream)

    assert agent.run(prompt) == "你的持仓很健康。"
    assert len(upstream.requests) == 1
    if not stream:
        assert agent.actions == ["pass"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_contextual_followup_requires_the_diagnosis(start_guarded, stream):
    def model(request: dict) -> Reply:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return Reply(content="体检完成：集中度偏高。")
        if corrective(last):
            return Reply(tool_calls=[("portfolio", '{"mode": "diagnose"}')])
        return Reply(content="看起来不错。")

    upstream, client, _ = start_guarded(model, example_policy("portfolio"))
    agent = agent_for(client, stream)
    agent.messages = [{"role": "user", "content": "我有什么持仓"}, {"role": "assistant", "content": HOLDINGS}]

    assert agent.run("体检") == "体检完成：集中度偏高。"
    assert 'portfolio(mode="diagnose")' in upstream.requests[1]["json"]["messages"][-1]["content"]
    assert agent.executions["portfolio"] == 1


def test_warn_only_policies_skip_the_reasks(start_guarded):
    policy = example_policy("portfolio").replace("version: 1\n", "version: 1\nmax_action: warn\n", 1)
    upstream, client, _ = start_guarded(never_calls, policy)
    answer = agent_for(client, stream=False).run("我买了啥")
    assert len(upstream.requests) == 1 and answer.startswith("[LoopGuard 提醒]")


def test_a_held_required_tool_answer_keeps_the_connection_alive(start_guarded):
    """The answer is held until it is known to call the tool; meanwhile the client gets the
    stream driver's keepalive comments (``streaming.keepalive_s`` of a quiet hold), then the
    answer whole."""

    def slow(request: dict) -> Reply:
        reply = forgetful(request)
        reply.chunk_delay = 0.2  # each chunk after a quiet wait longer than the keepalive
        return reply

    upstream, client, _ = start_guarded(slow, example_policy("portfolio"), config={"streaming": {"keepalive_s": 0.05}})
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "我有什么持仓？"}],
        "tools": declare("portfolio"),
    }
    raw = httpx.post(
        client.gateway_url + "/v1/chat/completions", json=body, timeout=30, headers={"authorization": "Bearer sk-test"}
    ).content
    assert HOLDING in raw.partition(b"data:")[0]  # before any of the answer
    events = [orjson.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: {")]
    calls = [c for e in events for choice in e["choices"] for c in choice["delta"].get("tool_calls") or ()]
    assert calls and calls[0]["function"]["name"] == "portfolio"  # the re-asked answer, the guess never shown
    assert len(upstream.requests) == 2
