"""End to end on the Anthropic Messages API: a turn that requires the portfolio tool (the shipped
example policy), with the anthropic SDK's agent loop, streamed and not. The corrective re-ask
makes the model call the tool; a model that never does gets its answer with the warning in front."""

from __future__ import annotations

import httpx
import pytest
from support.anthropic_upstream import Said
from support.claude_agent import ClaudeAgent
from support.claude_gateway import start_claude
from support.policies import example_policy

MARK = "[loopguard]"
HOLDINGS = "| 代码 | 名称 | 持股 | 成本价 |\n| 600519 | 贵州茅台 | 100 | 1500 |"
PORTFOLIO = [{"name": "portfolio", "description": "portfolio", "input_schema": {"type": "object"}}]


def corrective(message: dict) -> bool:
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    return message["role"] == "user" and any(str(b.get("text", "")).startswith(MARK) for b in blocks)


def forgetful(body: dict) -> Said:
    """Guesses instead of calling the tool, until it is told to call it."""
    last = body["messages"][-1]
    if isinstance(last["content"], list) and last["content"][0].get("type") == "tool_result":
        return Said(text="你持有贵州茅台 100 股。")
    if corrective(last):
        return Said(calls=[("portfolio", {"mode": "view"})])
    return Said(text="我猜你持有一些股票。")


def agent_for(client, stream: bool) -> ClaudeAgent:
    return ClaudeAgent(client, stream=stream, tools=PORTFOLIO, results={"portfolio": HOLDINGS})


@pytest.mark.parametrize("stream", [False, True])
def test_the_corrective_reask_makes_the_model_call_the_tool(start_claude, stream):
    upstream, client, _ = start_claude(forgetful, example_policy("portfolio"))
    agent = agent_for(client, stream)

    assert agent.run("我有什么持仓？") == "你持有贵州茅台 100 股。"

    assert agent.executions["portfolio"] == 1
    assert len(upstream.requests) == 3  # the guess, the re-ask, the answer after the tool ran
    reasked = upstream.requests[1]["json"]["messages"]
    assert reasked[-2] == {"role": "assistant", "content": [{"type": "text", "text": "我猜你持有一些股票。"}]}
    assert corrective(reasked[-1]) and 'portfolio(mode="view")' in reasked[-1]["content"][0]["text"]
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert not any(corrective(m) for m in agent.messages)


@pytest.mark.parametrize("stream", [False, True])
def test_after_max_retries_the_answer_carries_the_warning(start_claude, stream):
    upstream, client, _ = start_claude(lambda body: Said(text="你的持仓很健康。"), example_policy("portfolio"))
    answer = agent_for(client, stream).run("帮我审一下持仓")

    assert len(upstream.requests) == 3  # the answer and max_retries (2) corrective re-asks
    assert sum(corrective(m) for m in upstream.requests[-1]["json"]["messages"]) == 2
    assert answer.startswith("[LoopGuard 提醒]") and 'portfolio(mode="diagnose")' in answer
    assert answer.endswith("\n\n你的持仓很健康。")


def test_the_held_stream_is_one_valid_stream(start_claude):
    _upstream, client, gateway = start_claude(lambda body: Said(text="你的持仓很健康。"), example_policy("portfolio"))
    body = {"model": "m", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "持仓健康吗"}]}
    raw = httpx.post(gateway + "/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=10).content
    assert raw.count(b"event: message_start") == 1 and raw.count(b"event: message_stop") == 1
    with client.messages.stream(**{k: v for k, v in body.items() if k != "stream"}) as streamed:
        final = streamed.get_final_message()
    assert final.content[0].text.startswith("[LoopGuard 提醒]") and final.stop_reason == "end_turn"
