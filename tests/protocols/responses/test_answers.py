"""A Responses answer read and amended as a whole (unary and a complete client-bound stream)."""

from __future__ import annotations

import pytest
from support.responses_wire import function_call, message, reasoning, response, sse, stream_events

from gateway.protocols.base import Answer
from gateway.protocols.responses.answers import answer, prepend_text, stream_answer, stream_prepend_text

from .oracle import check_numbering, client_events, validate_response

NOTE = "[loopguard] This turn requires a call to run_tests."
OUTPUTS = {
    "text": [message("All good.")],
    "reasoning then text": [reasoning(), message("All good.")],
    "text and a call": [message("All good."), function_call("read_file", "{}", "call_1")],
    "no text": [function_call("read_file", "{}", "call_1")],
}


@pytest.mark.parametrize("output", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_unary_and_stream_answers_agree(output):
    calls = any(i["type"] == "function_call" for i in output)
    text = "All good." if any(i["type"] == "message" for i in output) else ""
    assert answer(response(output)) == Answer(calls, text)
    assert stream_answer(sse(stream_events(output))) == Answer(calls, text)


@pytest.mark.parametrize("output", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_prepended_text_comes_first_and_stays_valid(output):
    edited = prepend_text(response(output), NOTE)
    parsed = validate_response(edited)
    assert parsed.output_text.startswith(NOTE + "\n\n") or parsed.output_text == NOTE
    events = client_events(stream_prepend_text(sse(stream_events(output)), NOTE))
    check_numbering(events)
    final = validate_response(events[-1]["response"])
    assert final.output_text == parsed.output_text
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert deltas == final.output_text


def test_failed_or_unreadable_streams_have_no_answer():
    failed = stream_events([message("x")], closing="response.failed")
    assert stream_answer(sse(failed)) is None
    assert stream_answer(b"data: nope\n\n") is None
    assert answer("x") is None
