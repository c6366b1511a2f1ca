"""Tenants sharing the gateway's upstream key, end to end with the official SDKs.

``auth.keys`` entries name a tenant; with ``upstream.api_key`` (and ``anthropic_api_key``) the
upstream cannot tell tenants apart, so the gateway refuses (404, in the protocol's error shape)
every response, thread message and conversation id the caller's tenant did not create, on
requests and on the routes that read or delete them. Keys of one tenant share everything: an
agent rotating between them keeps its chain, judged whole.
"""

from __future__ import annotations

import itertools
from contextlib import ExitStack

import anthropic
import httpx
import openai
import pytest
from anthropic import beta_tool
from support.anthropic_upstream import Said
from support.anthropic_upstream import stubborn as claude_stubborn
from support.policies import ladder_policy
from support.responses_agent import ResponsesAgent
from support.responses_upstream import ResponsesUpstream, finishing, stubborn
from support.servers import serve
from support.thread_upstream import ThreadUpstream

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app

KEYS = [{"key": "sk-a1", "tenant": "a"}, {"key": "sk-a2", "tenant": "a"}, {"key": "sk-b", "tenant": "b"}]


@pytest.fixture
def gateway(tmp_path):
    """(responses upstream, thread upstream, gateway URL) for responders, with server-side keys."""
    with ExitStack() as stack:

        def start(responder=None, claude=None):
            openai_up = ResponsesUpstream(responder or finishing(0))
            claude_up = ThreadUpstream(claude or claude_stubborn())
            openai_url = stack.enter_context(serve(openai_up.app))
            claude_url = stack.enter_context(serve(claude_up.app))
            policy = tmp_path / "policy.yaml"
            policy.write_text(ladder_policy())
            config = Config.model_validate(
                {
                    "upstream": {
                        "base_url": openai_url + "/v1",
                        "api_key": "sk-server",
                        "anthropic_base_url": claude_url,
                        "anthropic_api_key": "sk-ant-server",
                    },
                    "auth": {"keys": KEYS},
                }
            )
            url = stack.enter_context(serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS))
            return openai_up, claude_up, url

        yield start


def openai_client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=20)


def claude(url: str, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, timeout=20)


ASK = {"model": "gpt-4.1", "input": "Summarize a.txt"}


def test_another_tenant_gets_404_for_a_response_id_on_every_route(gateway):
    upstream, _, url = gateway()
    mine = openai_client(url, "sk-a1").responses.create(**ASK)
    other = openai_client(url, "sk-b")

    with pytest.raises(openai.NotFoundError) as refused:
        other.responses.create(**ASK, previous_response_id=mine.id)
    assert refused.value.body["code"] == "previous_response_not_found"
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(mine.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.delete(mine.id)
    assert all(
        mine.id not in r["path"] and r["json"] is not None and r["json"].get("previous_response_id") is None
        for r in upstream.requests[1:]
    ), "nothing of B's reached the upstream"
    # The tenant's other key reads and continues it.
    sibling = openai_client(url, "sk-a2")
    assert sibling.responses.retrieve(mine.id).id == mine.id
    assert sibling.responses.create(**ASK, previous_response_id=mine.id).id


def test_another_tenant_gets_404_for_a_conversation(gateway):
    upstream, _, url = gateway()
    talk = openai_client(url, "sk-a1").conversations.create()
    other = openai_client(url, "sk-b")

    with pytest.raises(openai.NotFoundError):
        other.responses.create(**ASK, conversation=talk.id)
    with pytest.raises(openai.NotFoundError):
        other.conversations.retrieve(talk.id)
    assert not [r for r in upstream.requests if talk.id in r["path"] or (r["json"] or {}).get("conversation")]
    assert openai_client(url, "sk-a2").responses.create(**ASK, conversation=talk.id).id


def test_another_tenant_gets_404_for_a_thread_message_the_sdk_understands(gateway):
    _, upstream, url = gateway()
    first = claude(url, "sk-a1").beta.messages.create(
        model="claude-test",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        thread={"type": "create"},
        betas=["message-threads-2026-08-12"],
    )

    with pytest.raises(anthropic.NotFoundError) as refused:
        claude(url, "sk-b").beta.messages.create(
            model="claude-test",
            max_tokens=64,
            messages=[{"role": "user", "content": "more"}],
            thread={"type": "continue", "previous_message_id": first.id},
            betas=["message-threads-2026-08-12"],
        )
    assert refused.value.body["error"]["details"]["error_code"] == "thread_not_found"
    assert len(upstream.requests) == 1


class Rotating:
    """An openai client that sends each request with the next of its keys."""

    def __init__(self, url: str, keys: list[str]) -> None:
        self.clients = itertools.cycle([openai_client(url, key) for key in keys])

    @property
    def responses(self):
        return next(self.clients).responses


@pytest.mark.parametrize("stream", [False, True])
def test_another_tenant_gets_404_for_a_thread_message_streamed_too(gateway, stream):
    _, upstream, url = gateway(claude=lambda body: Said(text="Hello."))
    mine = claude(url, "sk-a1").beta.messages.create(
        model="claude-test",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        thread={"type": "create"},
        betas=["message-threads-2026-08-12"],
    )
    more = {
        "model": "claude-test",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "more"}],
        "thread": {"type": "continue", "previous_message_id": mine.id},
        "betas": ["message-threads-2026-08-12"],
    }

    with pytest.raises(anthropic.NotFoundError):
        reply = claude(url, "sk-b").beta.messages.create(stream=stream, **more)
        list(reply) if stream else reply
    assert len(upstream.requests) == 1  # nothing of B's reached the upstream
    sibling = claude(url, "sk-a2").beta.messages.create(stream=stream, **more)
    assert list(sibling) if stream else sibling.id  # the tenant's other key continues it


@beta_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}: nothing new"


def rotating_claude(url: str, keys: list[str], sent: list[str]) -> anthropic.Anthropic:
    """An anthropic client whose requests carry its keys in turn (the SDK's tool runner keeps
    one client; the key changes under it on every request); ``sent`` gets each key used."""
    turn = itertools.cycle(keys)

    def rotate(request) -> None:
        request.headers["x-api-key"] = next(turn)
        sent.append(request.headers["x-api-key"])

    http = anthropic.DefaultHttpxClient(event_hooks={"request": [rotate]}, timeout=20)
    return anthropic.Anthropic(base_url=url, api_key=keys[0], max_retries=0, http_client=http)


def run_claude(client: anthropic.Anthropic, threaded: bool, stream: bool) -> list:
    runner = client.beta.messages.tool_runner(
        model="claude-test",
        max_tokens=512,
        tools=[read_file],
        max_iterations=15,
        stream=stream,
        system="You fix bugs.",
        messages=[{"role": "user", "content": "summarize a.txt"}],
        **({} if threaded else {"thread": False}),
    )
    return [each.get_final_message() for each in runner] if stream else list(runner)


@pytest.mark.parametrize("stream", [False, True])
def test_a_thread_rotated_between_two_keys_of_one_tenant_is_ended_like_a_whole_history_loop(gateway, stream):
    _, whole_upstream, url = gateway()
    whole = run_claude(claude(url, "sk-a1"), threaded=False, stream=stream)
    _, threaded_upstream, url = gateway()
    sent: list[str] = []
    rotated = run_claude(rotating_claude(url, ["sk-a1", "sk-a2"], sent), threaded=True, stream=stream)

    assert len(rotated) == len(whole) < 15  # ended by the gateway, not by max_iterations
    assert rotated[-1].stop_reason == whole[-1].stop_reason == "end_turn"
    assert [b.text for b in rotated[-1].content if b.type == "text"] == [
        b.text for b in whole[-1].content if b.type == "text"
    ]
    assert threaded_upstream.rejections == []  # every request was valid for the thread's rules
    assert len(threaded_upstream.requests) == len(whole_upstream.requests)
    assert sent[:4] == ["sk-a1", "sk-a2", "sk-a1", "sk-a2"]
    keys = [r["headers"].get("x-api-key") for r in threaded_upstream.requests]
    assert set(keys) == {"sk-ant-server"}  # the server's key upstream, whichever key the client sent


@pytest.mark.parametrize("history", ["chain", "conversation"])
@pytest.mark.parametrize("mode", ["unary", "stream"])
def test_a_chain_rotated_between_two_keys_of_one_tenant_is_ended_like_a_whole_history_loop(gateway, mode, history):
    """``previous_response_id`` chains and ``conversation``s alike."""
    _, _, url = gateway(stubborn())
    whole = ResponsesAgent(openai_client(url, "sk-a1"), mode=mode)
    whole.run("Summarize a.txt", max_steps=19)
    _, _, url = gateway(stubborn())
    talk = openai_client(url, "sk-a2").conversations.create().id if history == "conversation" else None
    rotating = ResponsesAgent(Rotating(url, ["sk-a1", "sk-a2"]), mode=mode, chain=history == "chain", conversation=talk)
    rotating.run("Summarize a.txt", max_steps=19)

    assert rotating.executions == whole.executions and rotating.executions["read_file"] == 3
    assert len(rotating.responses) == len(whole.responses) < 19
    assert rotating.responses[-1].output_text == whole.responses[-1].output_text
