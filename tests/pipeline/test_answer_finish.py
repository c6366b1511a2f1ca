"""An agent that ends its runs by an action (its profile's ``finish``): a run the gateway ends
with the model's own answer ends with that action carrying the answer, in the protocol's shape
(chat completions, Anthropic Messages, Responses), so the agent submits it instead of refusing a
reply that calls nothing. A streamed answer stays text: the agents that end by an action ask
unstreamed."""

from __future__ import annotations

import json

import openai
from support.anthropic_upstream import Said
from support.claude_gateway import start_claude
from support.guarded import guarded
from support.policies import ladder_policy
from support.responses_upstream import Answer
from support.responses_upstream import guarded as guarded_responses
from support.upstream import Reply

from .bodies import looping_history

ANSWER = "a.txt says the same thing every time: the summary cannot be found there."
PROFILE = """
profiles:
  - name: finisher
    recognize: {tools: [read_file, submit_answer]}
    tools:
      read_file: {action: read, target: path}
    finish:
      tool: submit_answer
      arguments: {text: "Final: {answer}"}
"""
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
    for name in ("read_file", "submit_answer")
]


def closing(request: dict) -> Reply:
    if request.get("tool_choice") == "none":
        return Reply(content=ANSWER)
    return Reply(tool_calls=[("read_file", "{}")])


def test_a_chat_run_ended_with_the_answer_ends_with_the_finishing_call(tmp_path):
    with guarded(closing, tmp_path, ladder_policy(PROFILE)) as gw:
        reply = gw.client.chat.completions.create(model="m", messages=looping_history(5), tools=TOOLS)
    choice = reply.choices[0]
    assert choice.message.content == ANSWER and choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "submit_answer"
    assert json.loads(call.function.arguments) == {"text": f"Final: {ANSWER}"}


def test_a_streamed_answer_stays_text(tmp_path):
    with guarded(closing, tmp_path, ladder_policy(PROFILE)) as gw:
        chunks = list(
            gw.client.chat.completions.create(model="m", messages=looping_history(5), tools=TOOLS, stream=True)
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)


def test_an_agent_that_does_not_declare_the_finishing_tool_gets_the_answer_alone(tmp_path):
    """Taken for the agent by two of its three marking tools, the request declares no
    ``submit_answer``: no call of it is made up."""
    three = PROFILE.replace("tools: [read_file, submit_answer]", "tools: [read_file, list_dir, submit_answer]")
    declared = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("read_file", "list_dir")]
    with guarded(closing, tmp_path, ladder_policy(three)) as gw:
        response = gw.client.chat.completions.with_raw_response.create(
            model="m", messages=looping_history(5), tools=declared
        )
    reply = response.parse()
    assert response.headers["x-loopguard-profile"] == "finisher"
    assert reply.choices[0].message.content == ANSWER and not reply.choices[0].message.tool_calls


def test_an_agent_without_a_finishing_action_gets_the_answer_alone(tmp_path):
    with guarded(closing, tmp_path, ladder_policy()) as gw:
        reply = gw.client.chat.completions.create(model="m", messages=looping_history(5), tools=TOOLS)
    assert reply.choices[0].message.content == ANSWER and not reply.choices[0].message.tool_calls


def test_an_anthropic_run_ended_with_the_answer_ends_with_the_finishing_call(start_claude):
    def respond(body: dict) -> Said:
        if body.get("tool_choice") == {"type": "none"}:
            return Said(text=ANSWER)
        return Said(calls=[("read_file", {})])

    _, client, _ = start_claude(respond, ladder_policy(PROFILE))
    messages: list = [{"role": "user", "content": "summarize a.txt"}]
    for n in range(5):
        messages += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "read_file", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "same"}]},
        ]
    tools = [{"name": name, "input_schema": {"type": "object"}} for name in ("read_file", "submit_answer")]
    reply = client.messages.create(model="claude-test", max_tokens=100, messages=messages, tools=tools)
    assert reply.stop_reason == "tool_use"
    text, call = reply.content
    assert text.text == ANSWER and call.name == "submit_answer" and call.input == {"text": f"Final: {ANSWER}"}


def test_a_responses_run_ended_with_the_answer_ends_with_the_finishing_call(tmp_path):
    def respond(conversation: list, body: dict) -> Answer:
        if body.get("tool_choice") == "none":
            return Answer(ANSWER)
        return Answer(calls=[("read_file", "{}")])

    history: list = [{"role": "user", "content": "summarize a.txt"}]
    for n in range(5):
        history += [
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{n}", "output": "same"},
        ]
    tools = [
        {"type": "function", "name": name, "parameters": {"type": "object"}} for name in ("read_file", "submit_answer")
    ]
    with guarded_responses(respond, tmp_path, ladder_policy(PROFILE)) as (_, url):
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
        reply = client.responses.create(model="m", input=history, tools=tools)
    assert reply.output_text == ANSWER
    (call,) = [item for item in reply.output if item.type == "function_call"]
    assert call.name == "submit_answer" and json.loads(call.arguments) == {"text": f"Final: {ANSWER}"}
