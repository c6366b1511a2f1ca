"""Terminate mode answer when the tools-closed final answer's upstream reply is broken: cut in
the middle of an event, or a 200 whose body is not the protocol's JSON or SSE. The client gets
the termination template (streamed: ending with ``finish_reason`` and ``[DONE]``), never the raw
or truncated bytes, and the audit says ``reply``, what it got."""

from __future__ import annotations

import openai
import pytest
from pipeline.bodies import looping_history
from support.agent import TOOLS
from support.anthropic_upstream import Said
from support.claude_gateway import start_claude
from support.fixtures import start_guarded
from support.loop_bodies import claude_request, responses_request
from support.policies import ladder_policy
from support.upstream import Reply

from gateway.audit.memory_sink import MemorySink

TEMPLATE = "[LoopGuard] This run was stopped"
POLICY = ladder_policy("interventions:\n  terminate:\n    mode: answer\n")


def _chunk(content: str) -> bytes:
    return (
        b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"test-model",'
        b'"choices":[{"index":0,"delta":{"content":"' + content.encode() + b'"},"finish_reason":null}]}\n\n'
    )


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
        model="test-model", messages=looping_history(5), tools=TOOLS, stream=True
    )
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
    raw = client.chat.completions.with_raw_response.create(model="test-model", messages=looping_history(5), tools=TOOLS)
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


# --- Anthropic Messages: the same through the anthropic SDK ---------------------------------

CLAUDE_BROKEN = {
    # message_start, ping, the text block's start and first delta, then half an event.
    "cut mid-event": Said(text="I read a.txt and it never changed.", cut_after=4),
    "not SSE": Said(raw_stream=b"<html><body>Bad gateway</body></html>"),
}


@pytest.mark.parametrize("broken", list(CLAUDE_BROKEN), ids=list(CLAUDE_BROKEN))
def test_a_broken_anthropic_answer_becomes_the_template(start_claude, broken):
    def respond(body: dict) -> Said:
        if body.get("tool_choice") == {"type": "none"}:
            return CLAUDE_BROKEN[broken]
        return Said(calls=[("read_file", {"path": "a.txt"})])

    _, client, _ = start_claude(respond, POLICY)
    with client.messages.stream(**claude_request(5)) as streamed:
        message = streamed.get_final_message()
        header = streamed.response.headers["x-loopguard-terminate"]
    assert message.stop_reason == "end_turn"  # message_delta and message_stop: a whole message
    texts = [b.text for b in message.content if b.type == "text"]
    assert texts and texts[-1].startswith(TEMPLATE) and not any("Bad gateway" in t for t in texts)
    # Not SSE: nothing went out before it failed, the header waited and names the template. Cut:
    # the answer's start went out first (kept, its block closed), the template follows it.
    assert header == ("reply" if broken == "not SSE" else "answer")
    if broken != "not SSE":
        assert texts[0] == "I read a" and len(texts) == 2


# --- Responses: the same through the openai SDK's Responses stream ----------------------------


def _responses_upstream(broken: str):
    """A Responses upstream whose model calls read_file until tools are closed; its closed-tools
    answer is ``broken``: cut inside an event, or a stream that ends before ``response.completed``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route
    from support.responses_wire import encode, function_call, message, stream_events

    async def create(request: Request) -> StreamingResponse:
        body = await request.json()
        if body.get("tool_choice") != "none":
            events = [encode(e) for e in stream_events([function_call("read_file", '{"path": "a.txt"}', "call_x")])]
        else:
            events = [encode(e) for e in stream_events([message("I read a.txt and it never changed.")])][:-1]
            events = events[:4] + [events[4][:30]] if broken == "cut mid-event" else events

        async def pieces():
            for event in events:
                yield event

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/responses", create, methods=["POST"])])


RESPONSES_BROKEN = ["cut mid-event", "no response.completed"]


@pytest.mark.parametrize("times", [5, 4], ids=["at the request", "mid-stream"])
@pytest.mark.parametrize("broken", RESPONSES_BROKEN)
def test_a_broken_responses_answer_becomes_the_template(child_gateway, broken, times):
    from support.servers import serve

    with serve(_responses_upstream(broken)) as upstream_url:
        child = child_gateway(upstream_url, POLICY)
        client = openai.OpenAI(base_url=child.url + "/v1", api_key="k", max_retries=0)
        with client.responses.stream(**responses_request(times)) as stream:
            events = list(stream)
            final = stream.get_final_response()  # response.completed: a whole response
        assert events[-1].type == "response.completed"
        assert [e.type for e in events].count("response.completed") == 1
        numbers = [e.sequence_number for e in events]
        assert numbers == sorted(set(numbers))
        assert TEMPLATE in final.output_text
        assert not any(item.type == "function_call" for item in final.output)  # the closed tool never shows
        (terminated,) = [e for e in child.audit() if e["event"] == "loop_intervention" and e["action"] == "terminate"]
        assert terminated["terminate"] == "reply"
        assert terminated["phase"] == ("request" if times == 5 else "response")
