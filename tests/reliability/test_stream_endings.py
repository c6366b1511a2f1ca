"""Streams whose upstream fails after some events: reset (the connection dies) or truncated (a
clean end before the protocol's terminal event). Each client stream ends with its protocol's
own terminal error, nothing after it, and the log says which (``upstream_stream_failed``, the
``request`` line's ``ending``): Anthropic one ``error`` event; chat with several choices an
``error`` chunk and ``[DONE]``; Gemini one chunk that is Google's error object."""

from __future__ import annotations

import json
import socket

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from support.loop_bodies import CLAUDE_TEXT_START
from support.waiting import wait_for

ANTHROPIC_EVENTS = CLAUDE_TEXT_START
CHAT_EVENTS = [
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"one"},"finish_reason":null}]}\n\n',
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":1,'
    b'"delta":{"role":"assistant","content":"two"},"finish_reason":null}]}\n\n',
]
GEMINI_EVENTS = [
    b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "half an ans"}]}, "index": 0}]}\r\n\r\n',
]


def upstream_that(events: list[bytes], how: str):
    """A raw upstream sending ``events`` then dying: ``reset`` (no last chunk) or ``truncated``
    (a clean end of the body, the terminal event never sent)."""

    def handler(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for event in events:
            conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
        if how == "reset":
            conn.shutdown(socket.SHUT_RDWR)  # the body broken off: no last chunk
        else:
            conn.sendall(b"0\r\n\r\n")

    return handler


def read_events(url: str, path: str, body: dict) -> list[bytes]:
    with httpx.stream(
        "POST", url + path, json=body, timeout=30, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"}
    ) as response:
        assert response.status_code == 200
        raw = response.read()
    return [e for e in raw.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip() and not e.startswith(b":")]


def logged_failure(child, ending: str) -> None:
    assert wait_for(lambda: child.events("request"), timeout=30)
    (failed,) = child.events("upstream_stream_failed")
    assert failed["ending"] == ending
    (line,) = child.events("request")
    assert line["ending"] == ending


CLAUDE = {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.mark.parametrize("how", ["reset", "truncated"])
def test_an_anthropic_stream_whose_upstream_dies_ends_with_one_error_event(how, raw_upstream, child_gateway):
    up = raw_upstream(upstream_that(ANTHROPIC_EVENTS, how))
    child = child_gateway(up.url.removesuffix("/v1"))
    events = read_events(child.url, "/v1/messages", CLAUDE)
    assert events[:3] == [e.strip() for e in ANTHROPIC_EVENTS]  # what came, relayed
    (error,) = events[3:]  # then one error event and nothing after it: no message_stop
    assert error.startswith(b"event: error\n")
    assert json.loads(error.split(b"data: ", 1)[1])["error"]["type"] == "api_error"
    logged_failure(child, "error")

    client = anthropic.Anthropic(base_url=child.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:  # the agent sees a failed turn
        with client.messages.stream(**{k: v for k, v in CLAUDE.items() if k != "stream"}) as stream:
            stream.get_final_message()
    assert caught.value.body["error"]["type"] == "api_error"


CHAT_N2 = {
    "model": "m",
    "n": 2,
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
    "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
}


@pytest.mark.parametrize("how", ["reset", "truncated"])
def test_a_chat_stream_with_several_choices_ends_with_an_error_chunk_and_done(how, raw_upstream, child_gateway):
    up = raw_upstream(upstream_that(CHAT_EVENTS, how))
    child = child_gateway(up.url.removesuffix("/v1"))
    *_, error, done = read_events(child.url, "/v1/chat/completions", CHAT_N2)
    assert done == b"data: [DONE]"
    code = json.loads(error.removeprefix(b"data: "))["error"]["code"]
    assert code == ("upstream_truncated" if how == "truncated" else "upstream_unavailable")
    logged_failure(child, "error_chunk")

    client = openai.OpenAI(base_url=child.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIError) as caught:
        for _ in client.chat.completions.create(**{k: v for k, v in CHAT_N2.items() if k != "stream"}, stream=True):
            pass
    assert caught.value.code == code


GEMINI_PATH = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@pytest.mark.parametrize("how", ["reset", "truncated"])
def test_a_gemini_stream_whose_upstream_dies_ends_with_googles_error_chunk(how, raw_upstream, child_gateway):
    up = raw_upstream(upstream_that(GEMINI_EVENTS, how))
    base = up.url.removesuffix("/v1")
    child = child_gateway(base, upstream={"gemini_base_url": base})
    first, error = read_events(child.url, GEMINI_PATH, GEMINI)
    assert first == GEMINI_EVENTS[0].replace(b"\r\n", b"\n").strip()
    failure = json.loads(error.removeprefix(b"data: "))["error"]
    assert failure["code"] == 502 and failure["status"] == "UNAVAILABLE"
    logged_failure(child, "error")

    client = genai.Client(
        api_key="k",
        http_options=genai_types.HttpOptions(
            base_url=child.url, retry_options=genai_types.HttpRetryOptions(attempts=1)
        ),
    )
    texts = []
    with pytest.raises(genai_errors.ServerError) as caught:  # google-genai raises the error chunk
        for chunk in client.models.generate_content_stream(model="gemini-test", contents="hi"):
            texts.append(chunk.text)
    assert texts == ["half an ans"] and caught.value.code == 502
