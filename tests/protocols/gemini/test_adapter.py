"""The Gemini adapter bound to one request, and the reply edits it makes on a JSON-array stream
(``streamGenerateContent`` without ``alt=sse``): judged merged, written as one chunk."""

from __future__ import annotations

import pytest

from gateway.protocols.gemini.protocol import ADAPTER as GEMINI

PATH = "/v1beta/models/gemini-test:streamGenerateContent"


def chunk(*parts: dict, finish: str | None = None) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-test"}


def call(name: str, path: str) -> dict:
    return {"functionCall": {"name": name, "args": {"path": path}}}


ARRAY = [
    chunk({"text": "Reading "}),
    chunk({"text": "both."}, call("list_dir", ".")),
    chunk(call("read_file", "a.txt"), finish="STOP"),
]


@pytest.mark.parametrize(
    "path, query, array, streams",
    [
        (PATH, b"", True, False),  # no alt: Google answers one JSON array
        (PATH, b"alt=json", True, False),
        (PATH, b"alt=sse", False, True),
        (PATH, b"key=k&alt=sse", False, True),
        # ``alt`` read as Google's frontend reads it: percent-decoded, ``$alt`` the same
        # parameter, the last value given wins.
        (PATH, b"alt=%73se", False, True),
        (PATH, b"%24alt=sse", False, True),
        (PATH, b"alt=json&alt=sse", False, True),
        (PATH, b"alt=sse&alt=json", True, False),
        (PATH, b"alt=sse&%24alt=json", True, False),
        ("/v1beta/models/gemini-test:generateContent", b"", False, False),
        ("/v1beta/tunedModels/my-tuned:streamGenerateContent", b"alt=sse", False, True),
        ("/v1alpha/models/gemini-test:streamGenerateContent", b"", True, False),
    ],
)
def test_a_request_binds_what_the_gateway_writes_before_any_reply(path, query, array, streams):
    adapter = GEMINI.at({"path": path, "query_string": query})
    assert adapter.requests.stream({}) is streams
    assert isinstance(adapter.authored.termination_reply("stopped", {}), list) is array
    # Whatever the request asked for, a reply is judged in the shape it comes in.
    assert adapter.replies.reply_types == (dict, list)


@pytest.mark.parametrize("reply, array", [(ARRAY, True), (ARRAY[-1], False)])
def test_a_written_final_reply_takes_the_shape_the_upstreams_came_in(reply, array):
    for query in (b"", b"alt=sse"):  # whatever the request's query said
        adapter = GEMINI.at({"path": PATH, "query_string": query})
        written = adapter.replies.like(reply, adapter.authored.termination_reply("stopped", {}))
        assert isinstance(written, list) is array
        one = written[0] if array else written
        assert one["candidates"][0]["content"]["parts"] == [{"text": "stopped"}]


def test_an_arrays_calls_are_proposed_in_order_from_its_merged_chunks():
    adapter = GEMINI.at({"path": PATH, "query_string": b""})
    assert [c.name for c in adapter.replies.proposed_calls(ARRAY)[0]] == ["list_dir", "read_file"]
    said = adapter.replies.answer(ARRAY)
    assert said is not None and said.calls and said.text == "Reading both."


@pytest.mark.parametrize("keep, names", [((0,), []), ((1,), ["list_dir"]), ((2,), ["list_dir", "read_file"])])
def test_kept_calls_of_an_array_go_out_as_one_chunk(keep, names):
    adapter = GEMINI.at({"path": PATH, "query_string": b""})
    out = adapter.replies.keep_calls(ARRAY, keep)
    assert isinstance(out, list) and len(out) == 1
    parts = out[0]["candidates"][0]["content"]["parts"]
    assert [p["functionCall"]["name"] for p in parts if "functionCall" in p] == names
    assert "".join(p.get("text", "") for p in parts) == "Reading both."
    assert out[0]["candidates"][0]["finishReason"] == "STOP" and out[0]["modelVersion"] == "gemini-test"


def test_text_put_before_an_arrays_answer_goes_out_as_one_chunk():
    adapter = GEMINI.at({"path": PATH, "query_string": b""})
    out = adapter.replies.prepend_text([chunk({"text": "Done."}, finish="STOP")], "[LoopGuard] note")
    assert isinstance(out, list) and len(out) == 1
    assert [p["text"] for p in out[0]["candidates"][0]["content"]["parts"]] == ["[LoopGuard] note\n\n", "Done."]


def test_a_response_with_an_id_its_call_lacks_answers_the_call_by_name():
    """Gemini CLI 0.10 gives each functionResponse an id of its own and its functionCall none:
    the response still answers that call (by name, then by position)."""
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [call("read_file", "a.txt")]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "read_file-17965-98e6e", "name": "read_file", "response": {}}}],
        },
    ]
    body = {"contents": contents}
    turns = GEMINI.requests.conversation(body, GEMINI.requests.items(body)).turns
    calls = [c.id for t in turns for c in t.tool_calls]
    results = [t.tool_call_id for t in turns if t.role == "tool"]
    assert len(calls) == 1 and results == calls
