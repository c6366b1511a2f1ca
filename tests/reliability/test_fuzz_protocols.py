"""The fuzzers of ``test_fuzz`` for the other guarded protocols: fuzzed Responses and Anthropic
Messages bodies, and fuzzed upstream replies to them. The gateway itself never answers 5xx."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.upstream import Reply

from .conftest import FUZZ
from .test_fuzz import _no_gateway_5xx, _relayed_or_refused, arguments, json_values, text

SESSIONS = st.sampled_from(["a", "b", "c"])

# --- OpenAI Responses ---------------------------------------------------------------------------

part = st.fixed_dictionaries(
    {"type": st.sampled_from(["input_text", "output_text", "refusal", "x"])},
    optional={"text": st.one_of(text, json_values)},
)
response_item = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "developer", "bogus"])},
        optional={"type": st.just("message"), "content": st.one_of(text, st.lists(part, max_size=3), json_values)},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function_call", "custom_tool_call"])},
        optional={
            "call_id": st.one_of(text, st.none()),
            "name": st.one_of(text, st.none()),
            "arguments": arguments,
            "input": st.one_of(text, json_values),
            "id": text,
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function_call_output", "custom_tool_call_output"])},
        optional={"call_id": st.one_of(text, st.none()), "output": st.one_of(text, json_values)},
    ),
    json_values,
)
responses_bodies = st.fixed_dictionaries(
    {"model": st.one_of(text, json_values)},
    optional={
        "input": st.one_of(text, st.lists(response_item, max_size=8), json_values),
        "stream": st.booleans(),
        "tools": json_values,
        "previous_response_id": st.one_of(text, json_values),
        "store": st.booleans(),
        "instructions": st.one_of(text, json_values),
        "user": json_values,
        "metadata": json_values,
    },
)

# --- Anthropic Messages -------------------------------------------------------------------------

block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text")}, optional={"text": st.one_of(text, json_values)}),
    st.fixed_dictionaries(
        {"type": st.just("tool_use")},
        optional={"id": st.one_of(text, st.none()), "name": st.one_of(text, st.none()), "input": json_values},
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_result")},
        optional={
            "tool_use_id": st.one_of(text, st.none()),
            "is_error": st.booleans(),
            "content": st.one_of(text, json_values),
        },
    ),
    json_values,
)
anthropic_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "bogus"])},
    optional={"content": st.one_of(text, st.lists(block, max_size=4), json_values)},
)
messages_bodies = st.fixed_dictionaries(
    {"model": st.one_of(text, json_values)},
    optional={
        "max_tokens": st.integers(-1, 2**70),
        "messages": st.one_of(st.lists(anthropic_message, max_size=8), json_values),
        "system": st.one_of(text, json_values),
        "tools": json_values,
        "stream": st.booleans(),
        "metadata": st.one_of(json_values, st.fixed_dictionaries({"user_id": st.one_of(text, json_values)})),
    },
)

ROUTES = {"/v1/responses": responses_bodies, "/v1/messages": messages_bodies}


@pytest.fixture
def both_upstreams(make_gateway, upstream):
    """The gateway with Anthropic traffic sent to the same scripted upstream."""
    return make_gateway(upstream={"anthropic_base_url": upstream.url})


@pytest.mark.parametrize("path", list(ROUTES))
def test_fuzzed_bodies_never_get_a_gateway_5xx(both_upstreams, path):
    with httpx.Client(base_url=both_upstreams, timeout=10) as client:

        @FUZZ
        @given(body=ROUTES[path], session=SESSIONS)
        def check(body, session):
            raw = json.dumps(body).encode()  # big integers and lone surrogates included
            response = client.post(
                path, content=raw, headers={"x-loopguard-session": session, "content-type": "application/json"}
            )
            _no_gateway_5xx(response)

        check()


EVENT_TYPES = {
    "/v1/responses": [
        "response.created",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.output_text.delta",
        "response.output_item.done",
        "response.completed",
        "error",
        "x",
    ],
    "/v1/messages": [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
        "x",
    ],
}


def _event(kind: str, data: object) -> bytes:
    payload = {**data, "type": kind} if isinstance(data, dict) else data
    return b"event: " + kind.encode() + b"\ndata: " + json.dumps(payload).encode() + b"\n\n"


def sse(path: str):
    events = st.one_of(
        st.builds(_event, st.sampled_from(EVENT_TYPES[path]), json_values),
        st.binary(max_size=60).map(lambda b: b"data: " + b + b"\n\n"),
        st.sampled_from([b": comment\n\n", b"event: x\n", b"\n\n", b"data: [DONE]\n\n"]),
    )
    return st.lists(events, max_size=6)


upstream_json = st.one_of(st.binary(max_size=200), json_values.map(lambda v: json.dumps(v).encode()))
STARTERS = {
    "/v1/responses": {
        "model": "m",
        "input": "go",
        "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
    },
    "/v1/messages": {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
    },
}


@pytest.mark.parametrize("path", list(ROUTES))
def test_fuzzed_upstream_replies_never_become_a_gateway_5xx(both_upstreams, upstream, path):
    with httpx.Client(base_url=both_upstreams, timeout=10) as client:

        @FUZZ
        @given(body=upstream_json, events=sse(path), stream=st.booleans())
        def check(body, events, stream):
            upstream.passthrough_script.append(Reply(raw_stream=events) if stream else Reply(body=body))
            request = {**STARTERS[path], "stream": stream}
            if stream:
                with client.stream("POST", path, json=request) as response:
                    _no_gateway_5xx(response)
                    try:
                        response.read()
                    except httpx.RemoteProtocolError:
                        pass  # a broken upstream stream (no terminal event) may be cut
            else:
                _relayed_or_refused(client.post(path, json=request))

        check()
