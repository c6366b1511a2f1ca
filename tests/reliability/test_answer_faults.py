"""Terminate mode answer when the tools-closed final answer's upstream reply is broken: cut in
the middle of an event, or a 200 whose body is not the protocol's JSON or SSE. The client gets
the termination template (streamed: ending with ``finish_reason`` and ``[DONE]``), never the raw
or truncated bytes, and the audit says ``reply``, what it got."""

from __future__ import annotations

import openai
import pytest
from pipeline.bodies import looping_history
from support.agent import TOOLS
from support.fixtures import start_guarded  # noqa: F401 - the fixture
from support.policies import ladder_policy
from support.upstream import Reply

from gateway.audit.memory_sink import MemorySink

TEMPLATE = "[LoopGuard] This run was stopped"
POLICY = ladder_policy("interventions:\n  terminate:\n    mode: answer\n")


def _chunk(content: str) -> bytes:
    return (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"test-model",'
            b'"choices":[{"index":0,"delta":{"content":"' + content.encode() + b'"},"finish_reason":null}]}\n\n')


BROKEN = {
    # A part of the answer arrives, then the stream ends inside the next event.
    "cut mid-event": Reply(raw_stream=[_chunk("The file "), b'data: {"id":"chatcmpl-1","choi']),
    # A 200 that is not SSE at all (a proxy's HTML page).
    "not SSE": Reply(raw_stream=[b"<html><body>Bad gateway</body></html>"]),
}
UNARY = {
    "cut mid-body": Reply(body=b'{"id":"chatcmpl-1","object":"chat.completion","choices":[{"ind'),
    "not JSON": Reply(body=b"<html><body>Bad gateway</body></html>"),
}


def closing(broken: Reply):
    def respond(request: dict) -> Reply:
        if request.get("tool_choice") == "none":
            return broken
        return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])
    return respond


def audited(client) -> MemorySink:
    sink = MemorySink()
    client.gateway_app.state.gateway.audit.add(sink)
    return sink


@pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
def test_a_broken_streamed_answer_becomes_the_template(start_guarded, broken):
    _, client, _ = start_guarded(closing(BROKEN[broken]), POLICY)
    events = audited(client)
    raw = client.chat.completions.with_raw_response.create(
        model="test-model", messages=looping_history(5), tools=TOOLS, stream=True)
    chunks = list(raw.parse())  # the SDK parses every event: no raw bytes reached the client
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert TEMPLATE in text and "Bad gateway" not in text
    assert reasons == ["stop"]  # one end, after the template
    assert raw.headers["x-loopguard-terminate"] == "reply"
    assert [(e.phase, e.terminate) for e in events.events if e.action == "terminate"] == [("request", "reply")]


@pytest.mark.parametrize("broken", list(UNARY), ids=list(UNARY))
def test_a_broken_unary_answer_becomes_the_template(start_guarded, broken):
    _, client, _ = start_guarded(closing(UNARY[broken]), POLICY)
    events = audited(client)
    raw = client.chat.completions.with_raw_response.create(
        model="test-model", messages=looping_history(5), tools=TOOLS)
    assert raw.parse().choices[0].message.content.startswith(TEMPLATE)
    assert raw.headers["x-loopguard-terminate"] == "reply"
    assert [(e.phase, e.terminate) for e in events.events if e.action == "terminate"] == [("request", "reply")]


@pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
def test_a_broken_answer_after_a_veto_mid_stream_becomes_the_template(start_guarded, broken):
    from support.agent import Agent

    _, client, _ = start_guarded(closing(BROKEN[broken]), POLICY)
    events = audited(client)
    agent = Agent(client, tools={"read_file": lambda a: "same"}, stream=True)
    final = agent.run("summarize a.txt")
    assert TEMPLATE in final and "Bad gateway" not in final
    assert agent.finish_reasons[-1] == "stop"
    assert [(e.phase, e.terminate) for e in events.events if e.action == "terminate"] == [("response", "reply")]
