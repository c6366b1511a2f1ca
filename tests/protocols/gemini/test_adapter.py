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
    "path, query, types, streams",
    [
        (PATH, b"", (list,), False),  # no alt=sse: Google answers one JSON array
        (PATH, b"alt=sse", (dict,), True),
        (PATH, b"key=k&alt=sse", (dict,), True),
        ("/v1beta/models/gemini-test:generateContent", b"", (dict,), False),
    ],
)
def test_a_request_binds_the_reply_shape_it_is_judged_in(path, query, types, streams):
    adapter = GEMINI.at({"path": path, "query_string": query})
    assert adapter.replies.reply_types == types and adapter.requests.stream({}) is streams
    assert GEMINI.replies.reply_types == (dict,)  # the registry's own instance is never changed


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
