"""JSON orjson refuses is still read and written back as it came."""

import json

import orjson
import pytest

from gateway.wire import codec

REFUSED = [
    b'{"text":"half an emoji \\ud83d cut"}',  # a lone surrogate escape
    b'{"big":1e400,"small":-1e400,"fine":1.5}',  # beyond a double
    b'{"deep":' + b"[" * 300 + b"1e400" + b"]" * 300 + b"}",  # deeper than orjson writes
]


@pytest.mark.parametrize("body", REFUSED)
def test_refused_json_round_trips_through_the_fallback(body):
    with pytest.raises((orjson.JSONDecodeError, TypeError)):
        orjson.dumps(orjson.loads(body))
    value = codec.loads(body)
    out = codec.dumps(value)
    assert out == body  # compact input comes back byte for byte
    assert json.loads(out) == json.loads(body)


def test_an_edited_value_keeps_the_numbers_beyond_a_double():
    value = codec.loads(b'{"n":1e400,"messages":[]}')
    value["messages"] = [{"role": "system", "content": "note"}]
    assert codec.dumps(value) == b'{"n":1e400,"messages":[{"role":"system","content":"note"}]}'


def test_nan_and_infinity_literals_go_back_out_as_they_came():
    body = b'{"x":NaN,"y":[-Infinity,Infinity]}'
    assert codec.dumps(codec.loads(body)) == body


def test_text_that_is_not_json_is_refused():
    for body in (b'{"x": nope}', b"[1, 2"):
        with pytest.raises(codec.DecodeError):
            codec.loads(body)


def test_orjson_bodies_take_the_fast_path_unchanged():
    body = {"a": [1, 2.5, "é"], "b": None}
    assert codec.dumps(body) == orjson.dumps(body)
    assert codec.loads(orjson.dumps(body)) == body
