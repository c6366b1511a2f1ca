"""Which stored objects a body names (``protocols/objects.py``): the API's own references, at any
depth, and nothing the client or the model wrote."""

from __future__ import annotations

import pytest

from gateway.protocols.gemini.protocol import OWNED as GEMINI
from gateway.protocols.objects import Malformed, created_in, named_in
from gateway.protocols.openai_objects import OWNED as OPENAI


def names(body, kinds=OPENAI) -> list[tuple[str, str]]:
    return [(n.kind.kind, n.ident) for n in named_in(body, kinds)]


@pytest.mark.parametrize(
    "body, named",
    [
        ({"input_file_id": "file_1", "endpoint": "/v1/responses"}, [("file", "file_1")]),
        ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "file_2"}]}]}, [("file", "file_2")]),
        (
            {"tools": [{"type": "file_search", "vector_store_ids": ["vs_1", "vs_2"]}]},
            [("vector_store", "vs_1"), ("vector_store", "vs_2")],
        ),
        ({"tool_resources": {"code_interpreter": {"file_ids": ["file_3"]}}}, [("file", "file_3")]),
        ({"model": "ft:gpt-4o-mini:org::x"}, [("fine_tuned_model", "ft:gpt-4o-mini:org::x")]),
        ({"model": "gpt-4.1", "previous_response_id": None, "file_id": ""}, []),
        # What the client or the model wrote is no reference.
        ({"metadata": {"file_id": "file_9"}}, []),
        ({"tools": [{"type": "function", "parameters": {"properties": {"file_id": {"type": "string"}}}}]}, []),
        ({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "input": {"file_id": "file_9"}}]}]}, []),
        ({"input": [{"type": "function_call", "arguments": '{"file_id": "file_9"}'}]}, []),
    ],
)
def test_openai_references(body, named):
    assert names(body) == named


@pytest.mark.parametrize(
    "body, named",
    [
        ({"cachedContent": "cachedContents/abc"}, [("cached_content", "abc")]),
        ({"cachedContent": "abc"}, [("cached_content", "abc")]),
        (
            {
                "contents": [
                    {"parts": [{"fileData": {"fileUri": "https://generativelanguage.googleapis.com/v1beta/files/f1"}}]}
                ]
            },
            [("gemini_file", "f1")],
        ),
        ({"contents": [{"parts": [{"fileData": {"fileUri": "https://example.com/files/report.pdf"}}]}]}, []),
        (
            {"contents": [{"parts": [{"functionCall": {"name": "x", "args": {"cachedContent": "cachedContents/z"}}}]}]},
            [],
        ),
    ],
)
def test_gemini_references(body, named):
    assert sorted(set(names(body, GEMINI))) == named


@pytest.mark.parametrize("value", [["resp_1", 2], {"id": "file_1"}, 7, True])
def test_a_reference_that_is_no_id_is_malformed(value):
    with pytest.raises(Malformed):
        named_in({"input_file_id": value}, OPENAI)


def test_an_answer_names_what_it_made_at_its_top_level_only():
    answer = {
        "id": "batch_1",
        "output_file_id": "file_out",
        "metadata": {"output_file_id": "file_other", "x": {"object": "file", "id": "file_meta"}},
        "file": {"object": "file", "id": "file_done"},
        "data": [{"file_id": "file_deep"}],
    }
    assert sorted(n.ident for n in created_in(answer, OPENAI)) == ["file_done", "file_out"]
