"""The guard never fails open on a malformed part, table-driven: for each protocol, each field
of each content block (and of the message or item around it), each JSON type the field is not
(null, a boolean, a number, a string, a list, an object, a list or object shaped like another
block): the looping request with that part in its last call or result is sent to a real gateway
in front of the looping cloud. The gateway answers 400 in the protocol's shape or judges the
request reading the part as absent; never a 5xx, never a guard error that lets the request
through untouched (``loopguard_fail_open_errors`` does not move)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.cloud_routes import HEADERS, ROUTES, Route, cloud_gateway, looping_body
from support.looping_cloud import LoopingCloud
from support.rawhttp import send
from support.scrape import series

# One route per protocol family (the clouds' share their readers with these: Azure's and the
# OpenAI-compatible routes are chat's and Responses', Vertex's Gemini's and Anthropic's).
FAMILIES = {r.family: r for r in ROUTES if not r.stream}
WRONG = {
    "null": None,
    "true": True,
    "int": 7,
    "float": 0.5,
    "string": "tool_use",
    "list": ["tool_use"],
    "empty-list": [],
    "object": {"type": "tool_use"},
    "empty-object": {},
}

# (family, where the part is in the looping body's last call and result, the fields to make wrong)
_LAST_CALL, _LAST_RESULT = -2, -1
PARTS: list[tuple[str, tuple[Any, ...], tuple[str, ...]]] = [
    ("chat", ("messages", _LAST_CALL), ("role", "content", "tool_calls", "name", "function_call", "refusal")),
    ("chat", ("messages", _LAST_CALL, "tool_calls", 0), ("id", "type", "function", "index")),
    ("chat", ("messages", _LAST_CALL, "tool_calls", 0, "function"), ("name", "arguments")),
    ("chat", ("messages", _LAST_RESULT), ("role", "content", "tool_call_id", "name")),
    ("responses", ("input", _LAST_CALL), ("type", "call_id", "name", "arguments", "id", "status", "role")),
    ("responses", ("input", _LAST_RESULT), ("type", "call_id", "output", "id")),
    ("anthropic", ("messages", _LAST_CALL), ("role", "content")),
    ("anthropic", ("messages", _LAST_CALL, "content", 0), ("type", "id", "name", "input", "cache_control")),
    ("anthropic", ("messages", _LAST_RESULT, "content", 0), ("type", "tool_use_id", "content", "is_error", "text")),
    ("bedrock", ("messages", _LAST_CALL, "content", 0), ("type", "id", "name", "input")),
    ("bedrock", ("messages", _LAST_RESULT, "content", 0), ("type", "tool_use_id", "content", "is_error")),
    ("vertex_anthropic", ("messages", _LAST_CALL, "content", 0), ("type", "id", "name", "input")),
    ("gemini", ("contents", _LAST_CALL), ("role", "parts")),
    ("gemini", ("contents", _LAST_CALL, "parts", 0), ("functionCall", "text", "thought", "thoughtSignature")),
    ("gemini", ("contents", _LAST_CALL, "parts", 0, "functionCall"), ("name", "args", "id")),
    ("gemini", ("contents", _LAST_RESULT, "parts", 0), ("functionResponse", "text")),
    ("gemini", ("contents", _LAST_RESULT, "parts", 0, "functionResponse"), ("name", "response", "id")),
    ("converse", ("messages", _LAST_CALL), ("role", "content")),
    ("converse", ("messages", _LAST_CALL, "content", 0), ("toolUse", "text", "reasoningContent", "cachePoint")),
    ("converse", ("messages", _LAST_CALL, "content", 0, "toolUse"), ("toolUseId", "name", "input")),
    ("converse", ("messages", _LAST_RESULT, "content", 0), ("toolResult", "text")),
    ("converse", ("messages", _LAST_RESULT, "content", 0, "toolResult"), ("toolUseId", "content", "status")),
]
CASES = [
    pytest.param(family, where, field, value, id=f"{family}-{'.'.join(map(str, where[1:]))}.{field}-{kind}")
    for family, where, fields in PARTS
    for field in fields
    for kind, value in WRONG.items()
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with cloud_gateway(Path(tmp_path_factory.mktemp("parts")), LoopingCloud()) as url:
        yield url


def fail_opens(url: str) -> float:
    found = series(url, "loopguard_fail_open_errors_total")
    assert found is not None
    return found


def with_part(body: dict[str, Any], where: tuple[Any, ...], field: str, value: Any) -> dict[str, Any]:
    body = copy.deepcopy(body)
    node: Any = body
    for step in where:
        node = node[step]
    node[field] = value
    return body


@pytest.mark.parametrize(("family", "where", "field", "value"), CASES)
def test_a_malformed_part_is_refused_or_read_as_absent_never_a_guard_error(gateway, family, where, field, value):
    route: Route = FAMILIES[family]
    body = with_part(looping_body(route), where, field, value)
    before = fail_opens(gateway)
    answer = send(gateway, "POST", route.target, HEADERS, json.dumps(body).encode(), timeout=30)
    assert answer.status < 500, answer.body[:300]
    assert fail_opens(gateway) == before, "the guard failed open on it"
    if answer.status == 400:  # refused in the protocol's own error shape, by the gateway
        error = answer.json()
        assert ("error" in error) or ("message" in error), error
    else:
        assert answer.headers.get("x-loopguard-action") is not None
