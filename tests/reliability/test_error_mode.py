"""``terminate.mode: error`` through a real gateway process: a loop stopped mid-stream ends the
client stream with the protocol's own final error, and nothing after it, so an agent reports it
once instead of taking the run as finished (a trailing ``response.completed``) or retrying it
(Responses: code ``invalid_prompt``). The official SDKs see it as an agent does; raw reads check
that nothing follows."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest
from support.anthropic_upstream import AnthropicUpstream
from support.anthropic_upstream import stubborn as claude_stubborn
from support.loop_bodies import chat_request, claude_request, responses_request
from support.looping import RespondingUpstream, stubborn
from support.policies import ladder_policy
from support.responses_upstream import ResponsesUpstream
from support.responses_upstream import stubborn as responses_stubborn
from support.servers import serve

POLICY = ladder_policy("interventions:\n  terminate:\n    mode: error\n")
CALLS = 4  # executed identical calls in the history: the model's next identical one is the 5th


def chat_body() -> dict:
    return {**chat_request(CALLS), "stream": True}


def responses_body() -> dict:
    return {**responses_request(CALLS), "stream": True}


def claude_body() -> dict:
    return {**claude_request(CALLS), "stream": True}


def raw_events(url: str, path: str, body: dict) -> list[bytes]:
    """The stream's events as sent, SSE comments (the gateway's notes) left out."""
    with httpx.stream(
        "POST", url + path, json=body, timeout=30, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}
    ) as response:
        assert response.status_code == 200
        events = response.read().split(b"\n\n")
    return [e for e in events if e.strip() and not e.startswith(b":")]


def test_a_responses_stream_ends_with_response_failed_invalid_prompt(child_gateway):
    with serve(ResponsesUpstream(responses_stubborn()).app) as upstream_url:
        child = child_gateway(upstream_url, POLICY)
        *_, last = raw_events(child.url, "/v1/responses", responses_body())
        assert last.startswith(b"event: response.failed\n")  # nothing after it
        assert b'"code":"invalid_prompt"' in last.replace(b" ", b"")

        client = openai.OpenAI(base_url=child.url + "/v1", api_key="k", max_retries=0)
        events = list(
            client.responses.create(**{k: v for k, v in responses_body().items() if k != "stream"}, stream=True)
        )
        assert events[-1].type == "response.failed" and events[-1].response.error.code == "invalid_prompt"
        assert not any(e.type == "response.completed" for e in events)
        numbers = [e.sequence_number for e in events]
        assert numbers == sorted(set(numbers))  # numbered after what the client got
        with client.responses.stream(**{k: v for k, v in responses_body().items() if k != "stream"}) as stream:
            with pytest.raises(RuntimeError, match="response.completed"):
                stream.get_final_response()  # the Agents SDK's view: the run failed, not finished
        (line, *_) = child.events("request")
        assert line["ending"] == "response.failed"


def test_an_anthropic_stream_ends_with_one_error_event(child_gateway):
    with serve(AnthropicUpstream(claude_stubborn()).app) as upstream_url:
        child = child_gateway(upstream_url, POLICY)
        events = raw_events(child.url, "/v1/messages", claude_body())
        errors = [e for e in events if e.startswith(b"event: error\n")]
        assert errors == [events[-1]]  # one error event, and no message_delta / message_stop after it
        assert b"invalid_request_error" in errors[0]

        client = anthropic.Anthropic(base_url=child.url, api_key="k", max_retries=0)
        body = {k: v for k, v in claude_body().items() if k != "stream"}
        with pytest.raises(anthropic.APIStatusError) as caught:
            with client.messages.stream(**body) as stream:
                stream.get_final_message()
        assert caught.value.body["error"]["type"] == "invalid_request_error"


def test_a_chat_stream_ends_with_an_error_chunk_and_done(child_gateway):
    with serve(RespondingUpstream(stubborn()).app) as upstream_url:
        child = child_gateway(upstream_url, POLICY)
        *_, error, done = raw_events(child.url, "/v1/chat/completions", chat_body())
        assert done == b"data: [DONE]" and error.startswith(b'data: {"error"')

        client = openai.OpenAI(base_url=child.url + "/v1", api_key="k", max_retries=0)
        body = {k: v for k, v in chat_body().items() if k != "stream"}
        with pytest.raises(openai.APIError) as caught:
            for _ in client.chat.completions.create(**body, stream=True):
                pass
        assert caught.value.code == "loop_detected"
