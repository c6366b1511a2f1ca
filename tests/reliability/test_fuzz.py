"""Fuzzed request bodies and fuzzed upstream replies: the gateway itself never answers 5xx."""

from __future__ import annotations

import json

import httpx
from hypothesis import example, given
from hypothesis import strategies as st
from support.upstream import Reply

from .conftest import FUZZ

text = st.text(max_size=40)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | text
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
)
arguments = st.one_of(text, json_values.map(json.dumps), json_values)
tool_call = st.fixed_dictionaries(
    {
        "id": st.one_of(text, st.none()),
        "type": st.sampled_from(["function", "x"]),
        "function": st.fixed_dictionaries({"name": st.one_of(text, st.none()), "arguments": arguments}),
    }
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "developer", "bogus"])},
    optional={
        "content": st.one_of(text, st.none(), json_values),
        "tool_calls": st.one_of(st.lists(tool_call, max_size=3), json_values),
        "tool_call_id": st.one_of(text, st.none()),
    },
)
bodies = st.fixed_dictionaries(
    {"model": st.one_of(text, json_values)},
    optional={
        "messages": st.one_of(st.lists(message, max_size=8), json_values),
        "stream": st.booleans(),
        "tools": json_values,
        "n": st.integers(-1, 3),
        "user": json_values,
        "metadata": json_values,
    },
)


def _no_gateway_5xx(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])


def _relayed_or_refused(response: httpx.Response) -> None:
    """An upstream success that is not JSON, or not its protocol's reply (empty, a JSON array
    to a unary request), is a 502 naming it, on purpose; any other 5xx is not."""
    if response.status_code == 502 and b"not its protocol's reply" in response.content:
        return
    _no_gateway_5xx(response)


def test_fuzzed_request_bodies_never_get_a_gateway_5xx(gateway):
    with httpx.Client(base_url=gateway, timeout=10) as client:

        @FUZZ
        @given(body=bodies, session=st.sampled_from(["a", "b", "c"]))
        @example(body={"model": 2**70, "messages": [{"role": "user", "content": "hi"}]}, session="a")
        @example(body={"model": "m\ud800", "stream": True, "messages": []}, session="b")
        def check(body, session):
            raw = json.dumps(body).encode()  # big integers and lone surrogates included
            _no_gateway_5xx(client.post("/v1/chat/completions", content=raw, headers={"x-loopguard-session": session}))

        check()


def test_fuzzed_bytes_never_get_a_gateway_5xx(gateway):
    with httpx.Client(base_url=gateway, timeout=10) as client:

        @FUZZ
        @given(raw=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
        def check(raw):
            _no_gateway_5xx(client.post("/v1/chat/completions", content=raw))

        check()


upstream_bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {
            "choices": st.lists(
                st.fixed_dictionaries(
                    {
                        "message": st.fixed_dictionaries(
                            {"role": st.just("assistant")},
                            optional={
                                "content": st.one_of(text, st.none(), json_values),
                                "tool_calls": st.one_of(st.lists(tool_call, max_size=3), json_values),
                            },
                        ),
                        "index": st.integers(0, 3),
                        "finish_reason": st.one_of(text, st.none()),
                    }
                ),
                max_size=3,
            )
        },
        optional={"id": text, "model": json_values},
    ).map(lambda v: json.dumps(v).encode()),
)
sse_events = st.lists(
    st.one_of(
        st.binary(max_size=60).map(lambda b: b"data: " + b + b"\n\n"),
        json_values.map(lambda v: b"data: " + json.dumps(v).encode() + b"\n\n"),
        st.sampled_from(
            [
                b"data: [DONE]\n\n",
                b": comment\n\n",
                b"event: x\n",
                b"\n\n",
                b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}}]}\n\n',
            ]
        ),
    ),
    max_size=6,
)


def test_fuzzed_upstream_replies_never_become_a_gateway_5xx(gateway, upstream):
    """Unary bodies and SSE streams the upstream should never send: relayed, never a 500."""
    history = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    with httpx.Client(base_url=gateway, timeout=10) as client:

        @FUZZ
        @given(body=upstream_bodies, events=sse_events, stream=st.booleans())
        def check(body, events, stream):
            upstream.queue(Reply(raw_stream=events) if stream else Reply(body=body))
            if stream:
                with client.stream("POST", "/v1/chat/completions", json={**history, "stream": True}) as response:
                    _no_gateway_5xx(response)
                    try:
                        response.read()
                    except httpx.RemoteProtocolError:
                        pass  # a broken upstream stream is relayed broken, on purpose
            else:
                _relayed_or_refused(client.post("/v1/chat/completions", json=history))

        check()
