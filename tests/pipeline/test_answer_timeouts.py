"""Terminate mode answer when ``answer_timeout_s`` runs out while the model's final answer is
streaming, on the Anthropic Messages and Responses streams: the client already has part of the
answer, so its stream ends with the template after it and the protocol's own closing events
(every block or item it opened closed, one end), never a stream cut in the middle. On the
request path (the history already crossed terminate) and after a veto (mid-stream)."""

from __future__ import annotations

import json
from contextlib import ExitStack

import anthropic
import httpx
import openai
import pytest
from support import loop_bodies
from support.anthropic_upstream import Said
from support.claude_gateway import start_claude
from support.policies import ladder_policy
from support.responses_upstream import Answer, guarded

# Long and slow enough that the deadline falls inside the text, whatever the machine's load.
ANSWER = "I read a.txt and it never changed. " * 20
POLICY = ladder_policy("interventions:\n  terminate:\n    mode: answer\n    answer_timeout_s: 1.0\n")
TEMPLATE = "[LoopGuard] This run was stopped"
PATHS = {"request": 5, "response": 3}  # executed calls in the history: terminate now, or after a veto


def sse(lines: list[str]) -> list[tuple[str | None, dict]]:
    """(event name, data) of each SSE event, comments skipped."""
    events, name = [], None
    for line in lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and line != "data: [DONE]":
            events.append((name, json.loads(line[6:])))
            name = None
    return events


# --- Anthropic Messages ---------------------------------------------------------------------


def closing_claude(body: dict) -> Said:
    if body.get("tool_choice") == {"type": "none"}:
        return Said(text=ANSWER, chunk_delay=0.04)
    return Said(calls=[("read_file", {"path": "a.txt"})])


def claude_request(times: int) -> dict:
    return {**loop_bodies.claude_request(times), "stream": True}


def assert_well_formed_message(events: list[tuple[str | None, dict]]) -> list[str]:
    """One message_start, blocks opened and closed in turn, one message_delta, message_stop
    last; returns the text of each text block."""
    kinds = [data["type"] for _, data in events if data["type"] != "ping"]
    assert [name for name, data in events] == [data["type"] for _, data in events]  # event: names match
    assert kinds[0] == "message_start" and kinds.count("message_start") == 1
    assert kinds[-2:] == ["message_delta", "message_stop"] and kinds.count("message_stop") == 1
    texts: list[str] = []
    open_index = None
    for _, data in events:
        kind = data["type"]
        if kind == "content_block_start":
            assert open_index is None, f"block {data['index']} opened while {open_index} is open"
            assert data["index"] == len(texts)
            open_index = data["index"]
            texts.append(data["content_block"].get("text", ""))
        elif kind == "content_block_delta":
            assert data["index"] == open_index
            texts[-1] += data["delta"].get("text", "")
        elif kind == "content_block_stop":
            assert data["index"] == open_index
            open_index = None
        elif kind == "message_delta":
            assert open_index is None, f"message ended with block {open_index} open"
            assert data["delta"]["stop_reason"] == "end_turn"
    return texts


@pytest.mark.parametrize("path", PATHS)
def test_anthropic_answer_cut_by_the_deadline_ends_with_the_template(start_claude, path):
    upstream, _client, gateway = start_claude(closing_claude, POLICY)
    with httpx.stream(
        "POST",
        gateway + "/v1/messages",
        json=claude_request(PATHS[path]),
        timeout=20,
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    ) as response:
        lines = list(response.iter_lines())
    texts = assert_well_formed_message(sse(lines))
    assert texts[-1].startswith(TEMPLATE) and "read_file" in texts[-1]
    assert ANSWER.startswith(texts[0]) and texts[0], "the deadline fell before or after the answer's text"
    assert ": loopguard action=terminate detector=no_progress terminate=reply" in lines
    assert upstream.last["json"]["tool_choice"] == {"type": "none"}


@pytest.mark.parametrize("path", PATHS)
def test_the_anthropic_sdk_reads_the_cut_answer_and_the_template(start_claude, path):
    _upstream, client, _ = start_claude(closing_claude, POLICY)
    request = claude_request(PATHS[path])
    del request["stream"]
    with client.messages.stream(**request) as streamed:
        message = streamed.get_final_message()
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text", "text"]
    assert ANSWER.startswith(message.content[0].text) and message.content[1].text.startswith(TEMPLATE)


# --- Responses ------------------------------------------------------------------------------


def closing_responses(conversation: list, body: dict) -> Answer:
    if body.get("tool_choice") == "none":
        return Answer(ANSWER, pieces=len(ANSWER) // 8, chunk_delay=0.04)
    return Answer(calls=[("read_file", '{"path": "a.txt"}')])


@pytest.fixture
def responses_gateway(tmp_path):
    with ExitStack() as stack:
        yield stack.enter_context(guarded(closing_responses, tmp_path, POLICY))


def responses_history(times: int) -> list[dict]:
    history: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for n in range(times):
        history += [
            {"type": "function_call", "call_id": f"c{n}", "name": "read_file", "arguments": '{"path": "a.txt"}'},
            {"type": "function_call_output", "call_id": f"c{n}", "output": "same"},
        ]
    return history


def assert_well_formed_response(events: list[tuple[str | None, dict]]) -> tuple[list[str], dict]:
    """Numbers in order, every item and part opened is closed, response.completed last, listing
    the items shown; returns each message item's streamed text and the closing response."""
    kinds = [data["type"] for _, data in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.completed") == 1
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    items: dict[int, dict] = {}  # output_index -> {"id", "text", "done", "parts"}
    for _, data in events:
        kind, index = data["type"], data.get("output_index")
        if kind == "response.output_item.added":
            assert index == len(items) and all(i["done"] for i in items.values())
            items[index] = {"id": data["item"]["id"], "text": "", "done": False, "parts": 0}
        elif kind == "response.content_part.added":
            items[index]["parts"] += 1
        elif kind == "response.content_part.done":
            items[index]["parts"] -= 1
        elif kind == "response.output_text.delta":
            assert not items[index]["done"] and items[index]["parts"] == 1
            items[index]["text"] += data["delta"]
        elif kind == "response.output_text.done":
            assert data["text"] == items[index]["text"]
        elif kind == "response.output_item.done":
            assert items[index]["parts"] == 0 and data["item"]["id"] == items[index]["id"]
            items[index]["done"] = True
    assert all(i["done"] for i in items.values()), "an output item was never closed"
    closing = events[-1][1]["response"]
    assert closing["status"] == "completed"
    assert [item["id"] for item in closing["output"]] == [i["id"] for i in items.values()]
    return [i["text"] for i in items.values()], closing


@pytest.mark.parametrize("path", PATHS)
def test_responses_answer_cut_by_the_deadline_ends_with_the_template(responses_gateway, path):
    upstream, url = responses_gateway
    body = {"model": "gpt-4.1", "input": responses_history(PATHS[path]), "store": False, "stream": True}
    with httpx.stream(
        "POST", url + "/v1/responses", json=body, timeout=20, headers={"authorization": "Bearer sk-test"}
    ) as response:
        lines = list(response.iter_lines())
    texts, closing = assert_well_formed_response(sse(lines))
    assert texts[-1].startswith(TEMPLATE) and "read_file" in texts[-1]
    assert ANSWER.startswith(texts[0]) and texts[0], "the deadline fell before or after the answer's text"
    assert closing["output"][0]["content"][0]["text"] == texts[0]  # the closing lists what was streamed
    assert ": loopguard action=terminate detector=no_progress terminate=reply" in lines
    assert upstream.requests[-1]["json"]["tool_choice"] == "none"


@pytest.mark.parametrize("path", PATHS)
def test_the_openai_sdk_reads_the_cut_answer_and_the_template(responses_gateway, path):
    _upstream, url = responses_gateway
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
    streamed_text = ""
    with client.responses.stream(model="gpt-4.1", input=responses_history(PATHS[path]), store=False) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                streamed_text += event.delta
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == streamed_text
    first, last = [item.content[0].text for item in final.output]
    assert ANSWER.startswith(first) and last.startswith(TEMPLATE)
