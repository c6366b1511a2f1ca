"""Terminate mode answer, through the gateway with the real openai SDK: the run's final message
is the text the model wrote when asked once more with tools closed, or the template when it
cannot (the upstream fails, times out, or calls a tool again); streamed and not."""

import asyncio

import openai
import pytest
from support.agent import TOOLS, Agent
from support.policies import ladder_policy
from support.upstream import Reply

from gateway.audit.memory_sink import MemorySink

from .bodies import looping_history

ANSWER = "From a.txt I have the first section. Missing: the summary, since the file read never changed."
TEMPLATE = "[LoopGuard] This run was stopped"


def closing(closed=lambda request: Reply(content=ANSWER)):
    """Calls read_file forever; asked with tools closed, answers with ``closed(request)``."""

    def respond(request: dict) -> Reply:
        if request.get("tool_choice") == "none":
            return closed(request)
        return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])

    return respond


def note(request: dict) -> str:
    """The note asking for the final answer (a trailing system message)."""
    notes = [
        m["content"]
        for m in request["messages"]
        if m.get("role") == "system" and m["content"].startswith("[LoopGuard] You are in a loop")
    ]
    assert len(notes) == 1
    return notes[0]


def policy(extra: str = "") -> str:
    return ladder_policy("interventions:\n  terminate:\n    mode: answer\n" + extra)


def audited(client) -> MemorySink:
    sink = MemorySink()
    client.gateway_app.state.gateway.audit.add(sink)
    return sink


def answer_tokens(client) -> float:
    registry = client.gateway_app.state.gateway.metrics.registry
    return registry.get_sample_value("loopguard_terminate_answer_tokens_total", {"model": "test-model"}) or 0.0


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_agent_ends_with_the_models_own_answer(start_guarded, stream):
    upstream, client, _ = start_guarded(closing(), policy())
    events = audited(client)
    agent = Agent(client, tools={"read_file": lambda a: "same"}, stream=stream)

    assert agent.run("summarize a.txt") == ANSWER
    assert agent.finish_reasons[-1] == "stop" and agent.executions["read_file"] == 3
    asked = upstream.requests[-1]["json"]
    assert asked["tool_choice"] == "none" and asked["tools"] == TOOLS  # closed, still declared
    told = note(asked)
    assert "`read_file`, 5 times" in told and "Tools are now closed" in told and "3 tool calls" in told
    # The model's history up to the vetoed calls is what it answers from; the client's is intact.
    assert [m["role"] for m in asked["messages"]][-2:] == ["tool", "system"]
    assert not any("[LoopGuard]" in str(m.get("content")) for m in agent.messages)
    terminated = [e for e in events.events if e.action == "terminate"]
    assert [(e.phase, e.terminate) for e in terminated] == [("response", "answer")]
    assert answer_tokens(client) > 0  # reported (unary: 5) or estimated from the text (stream)


def test_the_headers_say_which_mode_ended_the_run(start_guarded):
    upstream, client, _ = start_guarded(closing(), policy())
    raw = client.chat.completions.with_raw_response.create(model="test-model", messages=looping_history(5), tools=TOOLS)
    assert raw.headers["x-loopguard-action"] == "terminate"
    assert raw.headers["x-loopguard-terminate"] == "answer"
    assert raw.parse().choices[0].message.content == ANSWER
    assert answer_tokens(client) == 5  # the upstream's own usage.completion_tokens
    assert len(upstream.requests) == 1 and upstream.last["json"]["tool_choice"] == "none"


def test_async_client_request_path_terminate_streams_the_answer(start_guarded):
    upstream, client, _ = start_guarded(closing(lambda r: Reply(content=ANSWER, chunk_delay=0.01)), policy())
    events = audited(client)

    async def run() -> tuple[str, dict]:
        async with openai.AsyncOpenAI(base_url=client.gateway_url + "/v1", api_key="sk-test", max_retries=0) as aclient:
            response = await aclient.chat.completions.with_raw_response.create(
                model="test-model", messages=looping_history(5), tools=TOOLS, stream=True
            )
            parts, reasons = [], []
            async for chunk in response.parse():
                for choice in chunk.choices:
                    parts.append(choice.delta.content or "")
                    reasons.append(choice.finish_reason)
            return "".join(parts), dict(response.headers), reasons

    text, headers, reasons = asyncio.run(run())
    assert text == ANSWER and reasons[-1] == "stop"
    assert headers["x-loopguard-action"] == "terminate" and headers["x-loopguard-terminate"] == "answer"
    assert [(e.phase, e.terminate) for e in events.events if e.action == "terminate"] == [("request", "answer")]
    assert upstream.last["json"]["tool_choice"] == "none" and note(upstream.last["json"])


def _final(client, stream: bool) -> tuple[str, str | None]:
    """A request whose history already crossed terminate: (final text, x-loopguard-terminate)."""
    kwargs = dict(model="test-model", messages=looping_history(5), tools=TOOLS)
    if not stream:
        raw = client.chat.completions.with_raw_response.create(**kwargs)
        return raw.parse().choices[0].message.content, raw.headers.get("x-loopguard-terminate")
    raw = client.chat.completions.with_raw_response.create(**kwargs, stream=True)
    chunks = list(raw.parse())
    assert chunks[-1].choices[0].finish_reason == "stop"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, raw.headers.get("x-loopguard-terminate")


FALLBACKS = {
    "upstream error": (lambda r: Reply(status=500), ""),
    "timeout": (lambda r: Reply(content=ANSWER, delay=2), "    answer_timeout_s: 0.3\n"),
    "a tool call again": (lambda r: Reply(tool_calls=[("read_file", '{"path": "a.txt"}')]), ""),
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("why", FALLBACKS.keys())
def test_the_template_when_the_model_cannot_answer_at_request(start_guarded, why, stream):
    closed, extra = FALLBACKS[why]
    upstream, client, _ = start_guarded(closing(closed), policy(extra))
    events = audited(client)
    text, header = _final(client, stream)
    assert text.startswith(TEMPLATE) and "read_file" in text
    assert header == "reply"  # a stream's headers wait for its first piece: what the client got
    assert [e.terminate for e in events.events if e.action == "terminate"] == ["reply"]
    assert upstream.last["json"]["tool_choice"] == "none"
    assert answer_tokens(client) == 0


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("why", FALLBACKS.keys())
def test_the_template_when_the_model_cannot_answer_after_a_veto(start_guarded, why, stream):
    closed, extra = FALLBACKS[why]
    upstream, client, _ = start_guarded(closing(closed), policy(extra))
    events = audited(client)
    agent = Agent(client, tools={"read_file": lambda a: "same"}, stream=stream)
    answer = agent.run("summarize a.txt")
    assert answer.startswith(TEMPLATE) and agent.finish_reasons[-1] == "stop"
    assert [e.terminate for e in events.events if e.action == "terminate"] == ["reply"]
    assert upstream.last["json"]["tool_choice"] == "none"


@pytest.mark.parametrize("stream", [False, True])
def test_mode_reply_never_asks_the_model(start_guarded, stream):
    upstream, client, _ = start_guarded(closing(), ladder_policy("interventions:\n  terminate:\n    mode: reply\n"))
    text, header = _final(client, stream)
    assert text.startswith(TEMPLATE) and header == "reply" and not upstream.requests


def test_mode_error_is_said_too(start_guarded):
    upstream, client, _ = start_guarded(closing(), ladder_policy("interventions:\n  terminate:\n    mode: error\n"))
    with pytest.raises(openai.UnprocessableEntityError) as raised:
        client.chat.completions.create(model="test-model", messages=looping_history(5), tools=TOOLS)
    assert raised.value.response.headers["x-loopguard-terminate"] == "error" and not upstream.requests
