"""A streamed chat-completions stop reads like the non-streamed one: once a conversation is at
warn level, a round's content is held with its tool calls until they are judged, so the words
next to a refused call ("Let me read a.txt again.") never reach the client, streamed or not.
Healthy streams are still relayed byte for byte."""

from __future__ import annotations

import httpx
from support.agent import Agent
from support.upstream import Reply

SAYING = "Let me read a.txt again."
ANSWER = "I kept reading a.txt; nothing in it changes."


def chatty(body: dict) -> Reply:
    if body.get("tool_choice") == "none":
        return Reply(content=ANSWER)
    return Reply(content=SAYING, tool_calls=[("read_file", '{"path": "a.txt"}')])


def texts(agent: Agent) -> list[str]:
    return [m["content"] for m in agent.messages if m.get("role") == "assistant" and m.get("content")]


def test_a_streamed_chat_stop_reads_exactly_like_the_non_streamed_one(start_guarded):
    _, unary_client, _ = start_guarded(chatty)
    unary = Agent(unary_client, stream=False)
    unary.run("summarize a.txt")
    _, stream_client, _ = start_guarded(chatty)
    streamed = Agent(stream_client, stream=True)
    streamed.run("summarize a.txt")

    assert texts(streamed) == texts(unary)
    assert streamed.messages[-1] == unary.messages[-1]
    assert SAYING not in (streamed.messages[-1].get("content") or "")
    assert unary.executions == streamed.executions


def test_a_healthy_chat_stream_is_relayed_byte_for_byte(start_guarded):
    upstream, client, _ = start_guarded(lambda body: Reply(content="all fine"))
    raw = [
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{"role":"assistant","content":"' + word + b'"},"finish_reason":null}]}\n\n'
        for word in (b"all", b" fine")
    ]
    raw += [
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    upstream.queue(Reply(raw_stream=raw))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream(
        "POST", client.gateway_url + "/v1/chat/completions", json=body, headers={"authorization": "Bearer sk-test"}
    ) as response:
        got = b"".join(response.iter_bytes())
    assert got == b"".join(raw)
