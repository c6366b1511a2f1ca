"""One real gateway guarding every protocol at once, each in front of its scripted model:
chat completions and the Responses API on one OpenAI-style upstream, Anthropic Messages, the
Gemini API, Bedrock Converse and Azure OpenAI (chat and Responses) on their own. For tests of
what the protocols share (metrics by route, tracing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
from starlette.applications import Starlette

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.anthropic_upstream import AnthropicUpstream, Said
from support.azure_upstream import DEPLOYMENT, AzureUpstream, azure_client
from support.converse_gateway import client_for as converse_client
from support.converse_upstream import MODEL as BEDROCK_MODEL
from support.converse_upstream import ConverseUpstream
from support.converse_upstream import Said as ConverseSaid
from support.gemini_gateway import client_for
from support.gemini_upstream import GeminiUpstream
from support.gemini_upstream import Said as GeminiSaid
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.responses_upstream import Answer, ResponsesUpstream
from support.servers import serve
from support.upstream import Reply

ANSWER = "done"


@dataclass
class Protocols:
    url: str
    app: Starlette
    chat: RespondingUpstream
    responses: ResponsesUpstream
    messages: AnthropicUpstream
    gemini: GeminiUpstream
    converse: ConverseUpstream
    azure: AzureUpstream

    def openai(self, **headers: str) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=self.url + "/v1", api_key="sk-test", max_retries=0, timeout=10, default_headers=headers
        )

    def anthropic(self, **headers: str) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            base_url=self.url, api_key="sk-test", max_retries=0, timeout=10, default_headers=headers
        )


@contextmanager
def all_protocols(tmp_path: Path, prepare: Callable[[Starlette], Any] | None = None) -> Iterator[Protocols]:
    """A gateway (ladder policy) whose models answer every request with ``ANSWER``;
    ``prepare(app)`` runs before it serves (e.g. to instrument it)."""
    chat = RespondingUpstream(lambda request: Reply(content=ANSWER))
    responses = ResponsesUpstream(lambda conversation, body: Answer(ANSWER))
    messages = AnthropicUpstream(lambda body: Said(text=ANSWER))
    gemini = GeminiUpstream(lambda body: GeminiSaid(text=ANSWER))
    converse = ConverseUpstream(lambda body: ConverseSaid(text=ANSWER), signed=False)
    azure = AzureUpstream(lambda request: Reply(content=ANSWER), lambda conversation, body: Answer(ANSWER))
    chat_route = next(r for r in chat.app.routes if r.path == "/v1/chat/completions")
    openai_style = Starlette(routes=[chat_route, *responses.app.routes])  # chat first: responses has a catch-all
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    with (
        serve(openai_style) as openai_url,
        serve(messages.app) as anthropic_url,
        serve(gemini.app) as gemini_url,
        serve(converse.app) as bedrock_url,
        serve(azure.app) as azure_url,
    ):
        config = Config.model_validate(
            {
                "upstream": {
                    "base_url": openai_url + "/v1",
                    "anthropic_base_url": anthropic_url,
                    "gemini_base_url": gemini_url,
                    "bedrock_base_url": bedrock_url,
                    "azure_base_url": azure_url,
                }
            }
        )
        app = build_app(config, policies=PolicyHolder(policy))
        if prepare is not None:
            prepare(app)
        with serve(app, **SERVER_OPTIONS) as url:
            yield Protocols(url, app, chat, responses, messages, gemini, converse, azure)


def one_of_each(protocols: Protocols, stream: bool = False) -> None:
    """A passing request on each guarded protocol, through the official SDKs."""
    hi = [{"role": "user", "content": "hi"}]
    chat = protocols.openai().chat.completions.create(model="m", messages=hi, stream=stream)
    said = (
        "".join(c.choices[0].delta.content or "" for c in chat if c.choices)
        if stream
        else chat.choices[0].message.content
    )
    assert said == ANSWER
    client = client_for(protocols.url)  # held: the SDK closes its connections when collected
    gemini = client.models
    bedrock = converse_client(protocols.url + "/bedrock")
    if stream:
        events = bedrock.converse_stream(
            modelId=BEDROCK_MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
        )
        said = "".join(
            e["contentBlockDelta"]["delta"].get("text", "") for e in events["stream"] if "contentBlockDelta" in e
        )
    else:
        answer = bedrock.converse(modelId=BEDROCK_MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}])
        said = answer["output"]["message"]["content"][0]["text"]
    assert said == ANSWER
    azure = azure_client(protocols.url)
    chat = azure.chat.completions.create(model=DEPLOYMENT, messages=hi, stream=stream)
    said = (
        "".join(c.choices[0].delta.content or "" for c in chat if c.choices)
        if stream
        else chat.choices[0].message.content
    )
    assert said == ANSWER
    if stream:
        with azure.responses.stream(model=DEPLOYMENT, input="hi") as events:
            assert events.get_final_response().output_text == ANSWER
    else:
        assert azure.responses.create(model=DEPLOYMENT, input="hi").output_text == ANSWER
    if stream:
        with protocols.openai().responses.stream(model="m", input="hi") as events:
            assert events.get_final_response().output_text == ANSWER
        with protocols.anthropic().messages.stream(model="m", max_tokens=5, messages=hi) as events:
            assert events.get_final_text() == ANSWER
        assert "".join(c.text or "" for c in gemini.generate_content_stream(model="m", contents="hi")) == ANSWER
        return
    assert gemini.generate_content(model="m", contents="hi").text == ANSWER
    assert protocols.openai().responses.create(model="m", input="hi").output_text == ANSWER
    assert protocols.anthropic().messages.create(model="m", max_tokens=5, messages=hi).content[0].text == ANSWER
