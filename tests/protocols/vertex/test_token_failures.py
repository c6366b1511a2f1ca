"""The gateway's own Google token source failing, through a real gateway, with the official
clients: whatever the token endpoint answers (no JSON, fields of the wrong type, a "token" with a
line break) or if it answers nothing at all, each Vertex request is answered at once in its
protocol's shape (502, or 503 for an endpoint that did not answer within ``upstream.timeout_s``),
the cloud is never sent it, and requests that wait together share one token request."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import anthropic
import pytest
from google.genai import errors
from support.google_oauth import BROKEN
from support.vertex_gateway import start_vertex
from support.vertex_upstream import CLAUDE, GEMINI

__all__ = ["start_vertex"]

HI = [{"role": "user", "content": "hi"}]


def gemini_failure(started) -> errors.APIError:
    client = started.genai()  # held: a client collected mid-call closes its connection pool
    with pytest.raises(errors.APIError) as failed:
        client.models.generate_content(model=GEMINI, contents="hi")
    return failed.value


def claude_failure(started) -> anthropic.APIStatusError:
    with pytest.raises(anthropic.APIStatusError) as failed:
        started.claude().messages.create(model=CLAUDE, max_tokens=5, messages=HI)
    return failed.value


@pytest.mark.parametrize("broken", sorted(set(BROKEN) - {"stall"}))
def test_a_token_endpoint_answering_no_token_is_a_502_in_each_protocols_shape(start_vertex, broken):
    started = start_vertex(credentials="gateway")
    started.tokens.broken = broken

    gemini, claude = gemini_failure(started), claude_failure(started)

    assert gemini.code == 502 and gemini.status == "UNAVAILABLE" and "access token" in gemini.message
    assert claude.status_code == 502 and claude.body["error"]["type"] == "api_error"
    assert started.upstream.requests == [] and started.upstream.tokens == []
    started.tokens.broken = None  # healed: the next request is served with a fresh token
    client = started.genai()
    assert client.models.generate_content(model=GEMINI, contents="hi").text == "hi"


def test_a_stalled_token_endpoint_answers_every_waiting_request_503_on_one_token_request(start_vertex):
    """Eight clients at once against an endpoint that never answers, ``timeout_s`` 1 s: each
    gets its 503 (google-auth alone would hold each for two minutes, one after another under
    its lock); the clients' own 30 s timeout is never reached."""
    started = start_vertex(credentials="gateway", upstream_settings={"timeout_s": 1.0})
    started.tokens.broken = "stall"

    with ThreadPoolExecutor(8) as pool:
        failures = list(pool.map(lambda _: claude_failure(started), range(8)))

    assert all(f.status_code == 503 and "did not answer in time" in f.message for f in failures)
    assert started.tokens.asked == 1  # one refresh in flight, every request waiting on it
    assert started.upstream.requests == []
