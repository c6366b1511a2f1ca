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
import httpx  # noqa: F401 - loaded before the servers start: the SDKs read it from sys.modules
import openai
import pytest
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
            config = Config.model_validate({
                "upstream": {"base_url": openai_url + "/v1", "api_key": "sk-server",
                             "anthropic_base_url": claude_url, "anthropic_api_key": "sk-ant-server"},
                "auth": {"keys": KEYS}})
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
    assert all(mine.id not in r["path"] and r["json"] is not None and r["json"].get("previous_response_id") is None
               for r in upstream.requests[1:]), "nothing of B's reached the upstream"
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
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}],
        thread={"type": "create"}, betas=["message-threads-2026-08-12"])

    with pytest.raises(anthropic.NotFoundError) as refused:
        claude(url, "sk-b").beta.messages.create(
            model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "more"}],
            thread={"type": "continue", "previous_message_id": first.id}, betas=["message-threads-2026-08-12"])
    assert refused.value.body["error"]["details"]["error_code"] == "thread_not_found"
    assert len(upstream.requests) == 1


class Rotating:
    """An openai client that sends each request with the next of its keys."""

    def __init__(self, url: str, keys: list[str]) -> None:
        self.clients = itertools.cycle([openai_client(url, key) for key in keys])

    @property
    def responses(self):
        return next(self.clients).responses


@pytest.mark.parametrize("mode", ["unary", "stream"])
def test_a_chain_rotated_between_two_keys_of_one_tenant_is_ended_like_a_whole_history_loop(gateway, mode):
    _, _, url = gateway(stubborn())
    whole = ResponsesAgent(openai_client(url, "sk-a1"), mode=mode)
    whole.run("Summarize a.txt", max_steps=19)
    _, _, url = gateway(stubborn())
    rotating = ResponsesAgent(Rotating(url, ["sk-a1", "sk-a2"]), mode=mode, chain=True)
    rotating.run("Summarize a.txt", max_steps=19)

    assert rotating.executions == whole.executions and rotating.executions["read_file"] == 3
    assert len(rotating.responses) == len(whole.responses) < 19
    assert rotating.responses[-1].output_text == whole.responses[-1].output_text
