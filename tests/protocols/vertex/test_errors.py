"""Bad input on Vertex's routes gets the cloud's own error shape, never a 500: Google's
``{"error": {"code", "message", "status"}}`` on Gemini's routes, Anthropic's ``{"type":
"error", "error": {...}}`` on Anthropic's, and the official clients raise their usual classes."""

from __future__ import annotations

import anthropic
import httpx
import pytest
from google.genai import errors
from support.vertex_gateway import CLIENT_TOKEN, start_vertex
from support.vertex_upstream import CLAUDE, GEMINI

LOCATED = "/vertex/v1/projects/proj/locations/us-east5/publishers"
GEMINI_PATH = f"{LOCATED}/google/models/{GEMINI}:generateContent"
CLAUDE_PATH = f"{LOCATED}/anthropic/models/{CLAUDE}:rawPredict"
HI = [{"role": "user", "content": "hi"}]


def google_shaped(reply: httpx.Response, status: int, name: str) -> None:
    error = reply.json()["error"]
    assert (reply.status_code, error["code"], error["status"]) == (status, status, name) and error["message"]


def anthropic_shaped(reply: httpx.Response, status: int, kind: str) -> None:
    body = reply.json()
    assert (reply.status_code, body["type"], body["error"]["type"]) == (status, "error", kind) and body["error"][
        "message"
    ]


# (path, body, headers, status, check): what the gateway or the cloud answers, in whose shape.
CASES = [
    pytest.param(
        GEMINI_PATH, b"{not json", True, 400, lambda r: google_shaped(r, 400, "INVALID_ARGUMENT"), id="gemini-malformed"
    ),
    pytest.param(
        CLAUDE_PATH,
        b"{not json",
        True,
        400,
        lambda r: anthropic_shaped(r, 400, "invalid_request_error"),
        id="claude-malformed",
    ),
    pytest.param(
        GEMINI_PATH.replace(GEMINI, "text-bison-nope"),
        b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}',
        True,
        404,
        lambda r: google_shaped(r, 404, "NOT_FOUND"),
        id="gemini-unknown-model",
    ),
    pytest.param(
        CLAUDE_PATH.replace(CLAUDE, "llama-nope"),
        b'{"anthropic_version": "vertex-2023-10-16", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}',
        True,
        404,
        lambda r: google_shaped(r, 404, "NOT_FOUND"),
        id="claude-unknown-model",
    ),
    pytest.param(
        GEMINI_PATH,
        b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}',
        False,
        401,
        lambda r: google_shaped(r, 401, "UNAUTHENTICATED"),
        id="gemini-no-token",
    ),
    pytest.param(
        CLAUDE_PATH,
        b'{"anthropic_version": "vertex-2023-10-16", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}',
        False,
        401,
        lambda r: google_shaped(r, 401, "UNAUTHENTICATED"),
        id="claude-no-token",
    ),
]


@pytest.mark.parametrize(("path", "body", "token", "status", "check"), CASES)
def test_bad_input_is_answered_in_the_clouds_shape(start_vertex, path, body, token, status, check):
    started = start_vertex()
    headers = {"content-type": "application/json"} | ({"authorization": f"Bearer {CLIENT_TOKEN}"} if token else {})

    reply = httpx.post(started.url + path, content=body, headers=headers, timeout=20)

    check(reply)


def test_the_official_clients_raise_their_usual_errors(start_vertex):
    started = start_vertex()
    genai = started.genai()
    with pytest.raises(errors.ClientError) as unknown:
        genai.models.generate_content(model="text-bison-nope", contents="hi")
    assert unknown.value.code == 404 and unknown.value.status == "NOT_FOUND"
    with pytest.raises(errors.ClientError) as refused:
        expired = started.genai(token="expired")  # held: the SDK closes its connections when collected
        expired.models.generate_content(model=GEMINI, contents="hi")
    assert refused.value.code == 401
    with pytest.raises(anthropic.NotFoundError):
        started.claude().messages.create(model="mistral-nope", max_tokens=5, messages=HI)  # not on this Vertex
    with pytest.raises(anthropic.AuthenticationError):
        started.claude(token="expired").messages.create(model=CLAUDE, max_tokens=5, messages=HI)


def test_gateway_credentials_that_give_no_token_are_a_clear_502_in_each_shape(start_vertex):
    started = start_vertex(credentials="gateway")
    started.tokens.failing = True  # the account was disabled

    client = started.genai()
    with pytest.raises(errors.ServerError) as gemini:
        client.models.generate_content(model=GEMINI, contents="hi")
    with pytest.raises(anthropic.APIStatusError) as claude:
        started.claude().messages.create(model=CLAUDE, max_tokens=5, messages=HI)

    assert gemini.value.code == 502 and "access token" in gemini.value.message
    assert claude.value.status_code == 502 and claude.value.body["error"]["type"] == "api_error"
    assert started.upstream.tokens == []  # nothing went out without a token
