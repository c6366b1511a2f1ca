"""Bodies orjson refuses (lone surrogate escapes, 1e400, deep nesting) are still guarded."""

import json

import orjson
import pytest
from support.seen import anchors, observations
from support.upstream import Reply

from .bodies import looping_history, post, raw_body

ODD = {
    "lone surrogate": b'"note":"half an emoji \\ud83d"',
    "beyond a double": b'"limits":{"x":1e400}',
    "deep nesting": b'"deep":' + b"[" * 300 + b"]" * 300,
}


@pytest.mark.parametrize("odd", ODD.values(), ids=ODD.keys())
def test_a_request_orjson_refuses_is_still_warned(start_guarded, odd):
    upstream, client, _ = start_guarded(lambda r: Reply(content="fine"))
    body = raw_body({"model": "m", "messages": looping_history()}, odd)
    response = post(client, body)
    assert response.status_code == 200 and response.headers["x-loopguard-action"] == "warn"
    forwarded = upstream.last["raw"]
    assert anchors(upstream.last["json"])  # the warning was injected...
    assert odd in forwarded  # ...and the odd field went out exactly as it came


def test_a_reply_orjson_refuses_still_has_its_calls_judged(start_guarded):
    call = {"id": "c9", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    refused = (
        b'{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"\\ud83d","tool_calls":['
        + orjson.dumps(call)
        + b']},"finish_reason":"tool_calls"}]}'
    )

    def model(request):
        if observations(request):
            return Reply(content="giving up on that file")
        return Reply(body=refused)

    upstream, client, _ = start_guarded(model)
    response = post(client, orjson.dumps({"model": "m", "messages": looping_history()}))
    # The 4th identical call was refused and re-asked, though its reply was not orjson's JSON.
    assert response.headers["x-loopguard-action"] == "reject"
    assert response.json()["choices"][0]["message"]["content"] == "giving up on that file"
    assert len(upstream.requests) == 2 and observations(upstream.last["json"])


def test_an_edited_reply_orjson_refuses_goes_out_with_its_odd_text_intact(start_guarded):
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(("list_dir", "read_file"))
    ]
    refused = (
        b'{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
        b'"message":{"role":"assistant","content":"\\ud83d","tool_calls":'
        + orjson.dumps(calls)
        + b'},"finish_reason":"tool_calls"}]}'
    )
    _upstream, client, _ = start_guarded(lambda r: Reply(body=refused))
    response = post(client, orjson.dumps({"model": "m", "messages": looping_history()}))
    assert response.headers["x-loopguard-action"] == "reject"
    assert b'"\\ud83d"' in response.content  # written back as the escape it came as
    message = json.loads(response.content)["choices"][0]["message"]
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["list_dir"]
