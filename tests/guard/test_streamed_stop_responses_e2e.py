"""A streamed Responses stop reads like the non-streamed one: once a conversation is at warn
level, a round's text and reasoning are held with its tool calls until they are judged, so the
words next to a refused call ("Let me read a.txt again.") never reach the client, streamed
(``responses.create(stream=True)`` or the SDK's stream helper) or not. The events the client
gets stay numbered without gaps. Healthy streams are still relayed byte for byte."""

from __future__ import annotations

import httpx
import pytest
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, sdk, start_responses
from support.responses_wire import message, reasoning, sse, stream_events

SAYING = "Let me read a.txt again."
ANSWER = "I kept reading a.txt; nothing in it changes."


def chatty(conversation: list, body: dict) -> Answer:
    if body.get("tool_choice") == "none":
        return Answer(ANSWER)
    return Answer(SAYING, calls=[("read_file", '{"path": "a.txt"}')])


def texts(agent: ResponsesAgent) -> list[str]:
    """What the user read: each response's message texts, as the final responses list them."""
    return [
        part.text
        for r in agent.responses
        for item in r.output
        if item.type == "message"
        for part in item.content
        if part.type == "output_text"
    ]


def streamed_texts(agent: ResponsesAgent) -> list[str]:
    """What the user read as it streamed: the text deltas of each message item, in order."""
    found: list[str] = []
    for events in agent.events:
        by_item: dict[str, str] = {}
        for event in events:
            if event.type == "response.output_text.delta":
                by_item[event.item_id] = by_item.get(event.item_id, "") + event.delta
        found += by_item.values()
    return found


def agent_for(url: str, mode: str, history: str) -> ResponsesAgent:
    """``history``: sent whole, chained by ``previous_response_id``, or kept in a conversation."""
    api = sdk(url)
    talk = api.conversations.create().id if history == "conversation" else None
    return ResponsesAgent(api, mode=mode, chain=history == "chain", conversation=talk)


@pytest.mark.parametrize("history", ["whole", "chain", "conversation"])
@pytest.mark.parametrize("mode", ["stream", "helper"])
def test_a_streamed_responses_stop_reads_exactly_like_the_non_streamed_one(start_responses, mode, history):
    _, unary_url = start_responses(chatty)
    unary = agent_for(unary_url, "unary", history)
    unary_answer = unary.run("summarize a.txt")
    _, stream_url = start_responses(chatty)
    streamed = agent_for(stream_url, mode, history)
    answer = streamed.run("summarize a.txt")

    assert answer == unary_answer and SAYING not in answer
    assert texts(streamed) == texts(unary)
    assert streamed_texts(streamed) == texts(unary)  # the deltas too: a refused round never shown
    assert texts(streamed).count(SAYING) == 3  # the three executed steps
    assert unary.executions == streamed.executions
    for events in streamed.events:  # numbered 0, 1, 2 ... and items indexed 0, 1, ... as shown
        assert [e.sequence_number for e in events] == list(range(len(events)))
        added = [e.output_index for e in events if e.type == "response.output_item.added"]
        assert added == list(range(len(added)))


def test_a_refused_rounds_reasoning_is_never_shown(start_responses):
    """Reasoning is held with the text: the stop's stream shows the answer's thinking only."""

    def thinking(conversation: list, body: dict) -> Answer:
        said = chatty(conversation, body)
        return Answer(said.text, said.calls, thought="The file may have changed.")

    upstream, url = start_responses(thinking)
    agent = ResponsesAgent(sdk(url), mode="helper")
    assert agent.run("summarize a.txt") == ANSWER
    assert len(upstream.requests) == 6  # the 4th step refused, asked again with tools closed
    last = agent.events[-1]
    assert [e.item.type for e in last if e.type == "response.output_item.done"] == ["reasoning", "message"]
    thoughts = [e.delta for e in last if e.type == "response.reasoning_summary_text.delta"]
    assert "".join(thoughts) == "The file may have changed."  # once, not once per round
    assert [e.sequence_number for e in last] == list(range(len(last)))
    assert [item.type for item in agent.responses[-1].output] == ["reasoning", "message"]


def test_a_healthy_responses_stream_is_relayed_byte_for_byte(start_responses):
    raw = sse(stream_events([reasoning("rs_1", "Nothing to do."), message("all fine", "msg_1")], "resp_1"))
    start_answer = Answer("unused", raw_stream=raw)
    _, url = start_responses(lambda conversation, body: start_answer)
    body = {"model": "m", "stream": True, "input": "hi"}
    with httpx.stream("POST", url + "/v1/responses", json=body, headers={"authorization": "Bearer sk-test"}) as reply:
        got = b"".join(reply.iter_bytes())
    assert got == raw
