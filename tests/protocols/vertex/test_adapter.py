"""The Vertex adapters bound to a request's path: its model, whether its reply streams (and, on
Gemini's routes, in which shape), what the gateway writes itself, how a recorded body is read
and how its savings are priced."""

from __future__ import annotations

import pytest

from gateway.context import upstream_path
from gateway.protocols import registry
from gateway.protocols.vertex import anthropic, gemini
from gateway.savings import Pricer

LOCATED = "/vertex/v1/projects/p/locations/us-east5/publishers"
CLAUDE_BODY = {
    "anthropic_version": "vertex-2023-10-16",
    "max_tokens": 5,
    "messages": [{"role": "user", "content": "hi"}],
}


def bound(path: str, query: bytes = b""):
    found = registry.guarded_route(path)
    assert found is not None
    adapter = registry.build().named(found[1].name)
    return adapter.at({"path": path, "query_string": query})


@pytest.mark.parametrize(
    ("path", "query", "name", "model", "streams"),
    [
        (
            f"{LOCATED}/anthropic/models/claude-sonnet-4-5@20250929:rawPredict",
            b"",
            "vertex_anthropic",
            "claude-sonnet-4-5@20250929",
            False,
        ),
        (
            f"{LOCATED}/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict",
            b"",
            "vertex_anthropic",
            "claude-sonnet-4-5@20250929",
            True,
        ),
        (f"{LOCATED}/google/models/gemini-2.5-pro:generateContent", b"", "vertex_gemini", "gemini-2.5-pro", False),
        (
            f"{LOCATED}/google/models/gemini-2.5-pro:streamGenerateContent",
            b"alt=sse",
            "vertex_gemini",
            "gemini-2.5-pro",
            True,
        ),
        (
            f"{LOCATED}/google/models/gemini-2.5-pro:streamGenerateContent",
            b"",
            "vertex_gemini",
            "gemini-2.5-pro",
            False,
        ),
    ],
)
def test_the_model_and_streaming_come_from_the_path(path, query, name, model, streams):
    adapter = bound(path, query)
    assert adapter.name == name
    assert adapter.requests.model({}) == model and adapter.requests.stream({}) is streams


def test_a_streamed_gemini_request_without_alt_sse_is_answered_as_one_json_array():
    adapter = bound(f"{LOCATED}/google/models/gemini-2.5-pro:streamGenerateContent")
    written = adapter.authored.termination_reply("stopped", {"contents": []})
    assert isinstance(written, list) and written[0]["modelVersion"] == "gemini-2.5-pro"


def test_the_gateways_own_anthropic_reply_names_the_paths_model():
    adapter = bound(f"{LOCATED}/anthropic/models/claude-x@1:streamRawPredict")
    assert adapter.authored.termination_reply("stopped", CLAUDE_BODY)["model"] == "claude-x@1"
    assert b'"model": "claude-x@1"' in b"".join(adapter.authored.termination_stream("stopped", CLAUDE_BODY)).replace(
        b'":"', b'": "'
    )


def test_the_token_count_is_not_a_model_call():
    assert bound(f"{LOCATED}/anthropic/models/count-tokens:rawPredict") is None


def test_the_path_below_the_mount_goes_upstream_whole():
    path = f"{LOCATED}/google/models/gemini-2.5-pro:generateContent"
    assert upstream_path(path, gemini.DECLARED.upstream) == path.removeprefix("/vertex")


def test_a_recorded_vertex_anthropic_body_is_read_as_its_own():
    assert registry.reader_of(CLAUDE_BODY) is anthropic.KIND
    assert registry.reader_of({**CLAUDE_BODY, "model": "claude-x", "system": "s"}).name == "anthropic"


@pytest.mark.parametrize(
    ("kind", "model"),
    [(anthropic.KIND, "claude-sonnet-4-5@20250929"), (gemini.KIND, "gemini-2.5-pro")],
)
def test_savings_are_priced_by_the_clouds_model_ids(kind, model):
    pricer = Pricer()
    messages = (
        [{"role": "user", "content": "hello there"}]
        if kind is anthropic.KIND
        else [{"role": "user", "parts": [{"text": "hello"}]}]
    )
    assert pricer.savings(messages, model, kind).cost
    assert pricer.methods[model].price == "table"
