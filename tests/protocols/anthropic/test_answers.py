"""A whole answer read and amended: what it says, and a warning put in front of its text."""

from __future__ import annotations

import pytest
from anthropic.types import Message

from gateway.protocols.anthropic.protocol import build as anthropic_adapter
from gateway.protocols.base import Answer

from .streams import PING, accumulate, end, ev, start, stream, text, thinking, tool
from .wire import assert_valid_request

A = anthropic_adapter()
WARNING = "[LoopGuard] Warning: this request requires calling `search`."


def message(*blocks, stop="end_turn"):
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": list(blocks),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


THOUGHT = {"type": "thinking", "thinking": "Answer directly.", "signature": "EqQBCgIYAh"}
SAID = {"type": "text", "text": "The answer is 42."}
CALL = {"type": "tool_use", "id": "toolu_01", "name": "search", "input": {"q": "x"}}


@pytest.mark.parametrize(
    "reply, expected",
    [
        (message(SAID), Answer(False, "The answer is 42.")),
        (message(THOUGHT, SAID, CALL, stop="tool_use"), Answer(True, "The answer is 42.")),
        (message(), Answer(False, "")),
        ({"content": None}, None),
        (None, None),
    ],
)
def test_answer(reply, expected):
    assert A.replies.answer(reply) == expected


@pytest.mark.parametrize(
    "blocks, texts",
    [
        ((SAID,), [f"{WARNING}\n\nThe answer is 42."]),
        ((THOUGHT, SAID), [f"{WARNING}\n\nThe answer is 42."]),
        ((THOUGHT,), [WARNING]),
        ((), [WARNING]),
    ],
)
def test_prepend_text(blocks, texts):
    out = Message.model_validate(A.replies.prepend_text(message(*blocks), WARNING))
    assert [b.text for b in out.content if b.type == "text"] == texts
    assert [b.type for b in out.content][:1] == (["thinking"] if blocks[:1] == (THOUGHT,) else ["text"])


@pytest.mark.parametrize(
    "answer, roles", [("I think it is 42.", ["assistant", "user"]), ("", ["user"]), ("  ", ["user"])]
)
def test_corrective_entries_keep_the_request_valid(answer, roles):
    items = [
        {"role": "user", "content": "What is it?"},
        *A.edits.corrective(answer, "[loopguard] Call `search` first."),
    ]
    assert [m["role"] for m in items[1:]] == roles
    assert_valid_request({"model": "m", "max_tokens": 10, "messages": items})


PLAIN = stream(start(), PING, thinking(0, "Direct."), text(1, "The answer", " is 42."), end("end_turn", 9))
CALLING = stream(start(), text(0, "Searching."), tool(1, "toolu_01", "search", '{"q": "x"}'), end())
THOUGHT_ONLY = stream(start(), thinking(0, "Hmm."), end("end_turn", 3))
ERRORED = stream(start(), text(0, "Part"), ev({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}))


@pytest.mark.parametrize(
    "data, expected",
    [
        (PLAIN, Answer(False, "The answer is 42.")),
        (CALLING, Answer(True, "Searching.")),
        (THOUGHT_ONLY, Answer(False, "")),
        (ERRORED, None),
        (b"", None),
        (b"data: nonsense\n\n", None),
    ],
)
def test_stream_answer(data, expected):
    assert A.streams.answer(data) == expected


@pytest.mark.parametrize(
    "data, texts",
    [
        (PLAIN, [f"{WARNING}\n\nThe answer is 42."]),
        (THOUGHT_ONLY, [WARNING]),
    ],
)
def test_stream_prepend_text_is_accumulated_by_the_sdk(data, texts):
    out = A.streams.prepend_text(data, WARNING)
    message = accumulate(out)
    assert [b.text for b in message.content if b.type == "text"] == texts
    assert message.content[0].type == "thinking"
    assert out.startswith(data[: data.index(b"event: content_block_start")])  # the rest as sent


def test_stream_prepend_text_leaves_an_unreadable_stream_alone():
    assert A.streams.prepend_text(b"data: x\n\n", WARNING) == b"data: x\n\n"
