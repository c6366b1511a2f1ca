"""Termination replies and veto messages, checked with the openai SDK's own types."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from gateway.protocols.chat.chunks import Envelope
from gateway.protocols.chat.replies import (
    assistant_message_for,
    termination_completion,
    termination_stream,
    veto_observation,
)
from gateway.protocols.errors import error_body
from gateway.protocols.sse import DONE
from gateway.trace.model import ToolCall

from .streams import accumulate, client_chunks

TEXT = "Run stopped by LoopGuard: `read` repeated 5 times with the same arguments. 终止。"


def test_termination_completion_is_a_valid_chat_completion() -> None:
    body = termination_completion(TEXT, "gpt-4o-mini")
    completion = ChatCompletion.model_validate(body)
    assert completion.id.startswith("chatcmpl-loopguard-") and len(completion.id) > len("chatcmpl-loopguard-")
    assert (completion.object, completion.model) == ("chat.completion", "gpt-4o-mini")
    choice = completion.choices[0]
    assert (choice.message.role, choice.message.content, choice.finish_reason) == ("assistant", TEXT, "stop")
    assert choice.message.tool_calls is None
    zeros = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert completion.usage.model_dump(exclude_none=True) == zeros
    assert termination_completion(TEXT, "m")["id"] != termination_completion(TEXT, "m")["id"]


@pytest.mark.parametrize("include_usage", [False, True])
def test_termination_stream_is_a_valid_stream(include_usage: bool) -> None:
    events = termination_stream(TEXT, "gpt-4o-mini", include_usage=include_usage)
    data = b"".join(events)
    assert events[-1] == DONE and data.count(DONE) == 1
    chunks = client_chunks(data)
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-loopguard-")
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    completion = accumulate(data)
    assert (completion.model, completion.choices[0].message.content) == ("gpt-4o-mini", TEXT)
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage is not None) == include_usage


def test_termination_reuses_a_given_envelope() -> None:
    env = Envelope(id="chatcmpl-up", created=123, model="m", system_fingerprint="fp")
    body = termination_completion(TEXT, "ignored", env)
    assert (body["id"], body["created"], body["model"], body["system_fingerprint"]) == ("chatcmpl-up", 123, "m", "fp")
    assert {c["id"] for c in client_chunks(b"".join(termination_stream(TEXT, "x", env)))} == {"chatcmpl-up"}


CALL = ToolCall(id="call_1", name="read", arguments='{"path": "a.txt"}')
VETO_CASES = [
    ("tool call", CALL, {"role": "tool", "tool_call_id": "call_1", "content": "rejected"}),
    ("legacy function call", ToolCall("", "read", "{}"), {"role": "function", "name": "read", "content": "rejected"}),
]


@pytest.mark.parametrize("call,expected", [c[1:] for c in VETO_CASES], ids=[c[0] for c in VETO_CASES])
def test_veto_observation(call: ToolCall, expected: dict) -> None:
    assert veto_observation(call, "rejected") == expected


def test_assistant_message_for_parallel_calls() -> None:
    other = ToolCall("call_2", "search", '{"q": "x"}')
    message = assistant_message_for([CALL, other])
    assert message["content"] is None
    parsed = ChatCompletionMessage.model_validate(message)
    assert [(c.id, c.function.name, c.function.arguments) for c in parsed.tool_calls] == [
        ("call_1", "read", CALL.arguments),
        ("call_2", "search", other.arguments),
    ]


def test_assistant_message_for_legacy_call() -> None:
    message = assistant_message_for([ToolCall("", "read", "{}")])
    parsed = ChatCompletionMessage.model_validate(message)
    assert parsed.function_call.name == "read" and parsed.tool_calls is None


ERROR_CASES = [
    (("bad json", "invalid_request_error"), ("bad json", "invalid_request_error", None, None)),
    (("loop", "loop_detected", "messages", "loop_detected"), ("loop", "loop_detected", "messages", "loop_detected")),
]


@pytest.mark.parametrize("args,expected", ERROR_CASES)
def test_error_body_has_the_openai_shape(args: tuple, expected: tuple) -> None:
    assert error_body(*args) == {"error": dict(zip(("message", "type", "param", "code"), expected))}
