"""End to end on Azure OpenAI: the openai SDK's ``AzureOpenAI`` / ``AsyncAzureOpenAI`` (and the
plain client on Azure's v1 routes), a real gateway, and a scripted Azure resource that checks
each request's path, ``api-version`` and credential, all on loopback."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from support.agent import TOOLS, Agent
from support.azure_upstream import (
    API_VERSION,
    CLIENT_KEY,
    DEPLOYMENT,
    ENTRA_TOKEN,
    AzureUpstream,
    async_azure_client,
    azure_client,
    start_azure,
    v1_client,
)
from support.looping import stubborn
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, finishing
from support.servers import serve
from support.upstream import Reply

FINAL = "I could not finish: a.txt never changed."
MAX_EXECUTED = 8
READ = '{"path": "a.txt"}'


def closing_chat(request: dict) -> Reply:
    """Loops on one read; with tools closed (``tool_choice: none``), its own final answer."""
    return Reply(content=FINAL) if request.get("tool_choice") == "none" else Reply(tool_calls=[("read_file", READ)])


def closing_responses(conversation: list, body: dict) -> Answer:
    return Answer(FINAL) if body.get("tool_choice") == "none" else Answer(calls=[("read_file", READ)])


def healthy_chat(request: dict) -> Reply:
    """Reads three different files, then answers."""
    done = sum(1 for m in request["messages"] if m.get("role") == "tool")
    return (
        Reply(content="All three read.") if done >= 3 else Reply(tool_calls=[("read_file", f'{{"path": "f{done}"}}')])
    )


def said(messages: list[dict]) -> list[tuple]:
    """What each message says (the scripted model's call ids differ from run to run)."""
    return [
        (
            m["role"],
            m.get("content") or "",
            [(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls", [])],
        )
        for m in messages
    ]


# -- chat completions: /openai/deployments/{deployment}/chat/completions --------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_chat_agent_is_ended_with_the_models_own_answer(start_azure, stream):
    upstream, gateway = start_azure(closing_chat)
    agent = Agent(azure_client(gateway), stream=stream, model=DEPLOYMENT)

    answer = agent.run("summarize a.txt")

    assert answer == FINAL and sum(agent.executions.values()) <= MAX_EXECUTED
    closed = upstream.chat.requests[-1]["json"]
    assert closed["tool_choice"] == "none" and closed["tools"]
    assert {r["path"] for r in upstream.seen} == {f"/openai/deployments/{DEPLOYMENT}/chat/completions"}
    assert all(r["query"] == f"api-version={API_VERSION}" for r in upstream.seen)
    assert all(r["headers"]["api-key"] == CLIENT_KEY for r in upstream.seen)


@pytest.mark.parametrize("stream", [False, True])
def test_an_async_looping_chat_agent_is_ended_too(start_azure, stream):
    upstream, gateway = start_azure(closing_chat)

    async def step(client: openai.AsyncAzureOpenAI, messages: list) -> dict:
        kwargs = {"model": DEPLOYMENT, "messages": messages, "tools": TOOLS}
        if not stream:
            return (await client.chat.completions.create(**kwargs)).choices[0].message.model_dump(exclude_none=True)
        # Read as the SDK's stream helper reads, from create(stream=True): older releases' async
        # helper refuses tools not marked strict, which a real agent's tools are not.
        state = ChatCompletionStreamState()
        async for chunk in await client.chat.completions.create(**kwargs, stream=True):
            state.handle_chunk(chunk)
        return state.get_final_completion().choices[0].message.model_dump(exclude_none=True, exclude={"parsed"})

    async def run() -> tuple[str | None, int]:
        client = async_azure_client(gateway)
        messages: list = [{"role": "user", "content": "summarize a.txt"}]
        for executed in range(20):
            message = await step(client, messages)
            calls = message.get("tool_calls") or []
            if not calls:
                return message.get("content"), executed
            messages.append({**message, "tool_calls": [{k: c[k] for k in ("id", "type", "function")} for c in calls]})
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": "same"} for c in calls]
        return None, 20

    answer, executed = asyncio.run(run())

    assert answer == FINAL and executed <= MAX_EXECUTED
    assert upstream.last["path"] == f"/openai/deployments/{DEPLOYMENT}/chat/completions"


@pytest.mark.parametrize("stream", [False, True])
def test_a_healthy_chat_agent_gets_what_it_gets_without_the_gateway(start_azure, stream):
    upstream, gateway = start_azure(healthy_chat)
    through = Agent(azure_client(gateway), stream=stream, model=DEPLOYMENT)
    answer = through.run("read three files")
    with serve(AzureUpstream(healthy_chat).app) as direct_url:
        direct = Agent(azure_client(direct_url), stream=stream, model=DEPLOYMENT)
        assert direct.run("read three files") == answer == "All three read."
    assert said(through.messages) == said(direct.messages) and through.executions == direct.executions
    assert all("LoopGuard" not in r["raw"].decode() for r in upstream.seen)


@pytest.mark.parametrize("stream", [False, True])
def test_a_healthy_request_and_its_reply_pass_byte_for_byte(start_azure, stream):
    said = (
        Reply(
            raw_stream=[
                b'data: {"id": "c1", "object": "chat.completion.chunk", "choices": []}\n\n',
                b"data: [DONE]\n\n",
            ]
        )
        if stream
        else Reply(body=b'{"id": "c1",  "object": "chat.completion", "choices": []}')
    )
    upstream, gateway = start_azure(lambda request: said)
    body = {"model": DEPLOYMENT, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    raw = json.dumps(body).encode()  # spaces after separators: a re-encoded body would differ
    path = f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={API_VERSION}&x=1"

    answer = httpx.post(
        gateway + path, content=raw, headers={"api-key": CLIENT_KEY, "content-type": "application/json"}
    )

    assert answer.status_code == 200
    assert answer.content == (b"".join(said.raw_stream or []) if stream else said.body)
    assert upstream.last["raw"] == raw and upstream.last["query"] == f"api-version={API_VERSION}&x=1"


def test_the_v1_routes_take_the_deployment_from_the_body(start_azure):
    upstream, gateway = start_azure(closing_chat, closing_responses)
    agent = Agent(v1_client(gateway), model=DEPLOYMENT)

    assert agent.run("summarize a.txt") == FINAL
    assert {r["path"] for r in upstream.seen} == {"/openai/v1/chat/completions"}
    assert all(r["query"] == "" and r["headers"]["authorization"] == f"Bearer {CLIENT_KEY}" for r in upstream.seen)

    responses = ResponsesAgent(v1_client(gateway))
    assert responses.run("summarize a.txt") == FINAL
    assert upstream.last["path"] == "/openai/v1/responses"


# -- the Responses API: /openai/responses ----------------------------------------------------------


@pytest.mark.parametrize("chain", [False, True])
@pytest.mark.parametrize("mode", ["unary", "stream", "helper"])
def test_a_looping_responses_agent_is_ended_with_the_models_own_answer(start_azure, mode, chain):
    upstream, gateway = start_azure(None, closing_responses)
    agent = ResponsesAgent(azure_client(gateway), mode=mode, chain=chain)

    answer = agent.run("summarize a.txt")

    assert answer == FINAL and sum(agent.executions.values()) <= MAX_EXECUTED
    assert upstream.responses.requests[-1]["json"]["tool_choice"] == "none"
    assert {(r["path"], r["query"]) for r in upstream.seen} == {("/openai/responses", f"api-version={API_VERSION}")}


@pytest.mark.parametrize("mode", ["unary", "stream"])
def test_a_healthy_responses_agent_gets_what_it_gets_without_the_gateway(start_azure, mode):
    upstream, gateway = start_azure(None, finishing(3))
    through = ResponsesAgent(azure_client(gateway, deployment=DEPLOYMENT), mode=mode, chain=True)
    answer = through.run("read three files")
    with serve(AzureUpstream(None, finishing(3)).app) as direct_url:
        direct = ResponsesAgent(azure_client(direct_url, deployment=DEPLOYMENT), mode=mode, chain=True)
        assert direct.run("read three files") == answer == "All files read: the retry limit is 3."
    assert through.executions == direct.executions
    assert all(b"LoopGuard" not in r["raw"] for r in upstream.seen)


def test_a_deployment_path_on_the_responses_api_is_guarded_as_that_deployment(start_azure):
    """A client whose base URL ends in the deployment (``base_url=.../openai/deployments/x``)
    sends its Responses calls there."""
    upstream, gateway = start_azure(None, closing_responses)
    client = openai.AzureOpenAI(
        base_url=f"{gateway}/openai/deployments/{DEPLOYMENT}",
        api_version=API_VERSION,
        api_key=CLIENT_KEY,
        max_retries=0,
    )
    agent = ResponsesAgent(client, mode="stream")

    assert agent.run("summarize a.txt") == FINAL
    assert upstream.last["path"] == f"/openai/deployments/{DEPLOYMENT}/responses"


# -- credentials ----------------------------------------------------------------------------------


def test_an_entra_token_is_forwarded_as_sent(start_azure):
    upstream, gateway = start_azure()
    client = azure_client(gateway, azure_ad_token=ENTRA_TOKEN)

    client.chat.completions.create(model=DEPLOYMENT, messages=[{"role": "user", "content": "hi"}])

    assert upstream.last["headers"]["authorization"] == f"Bearer {ENTRA_TOKEN}"
    assert "api-key" not in upstream.last["headers"]


@pytest.mark.parametrize("auth", [{"api_key": "tenant-key"}, {"azure_ad_token": "tenant-token"}])
def test_a_server_side_key_replaces_the_clients_credential(start_azure, auth):
    upstream, gateway = start_azure(keys=("az-server-key",), azure_api_key="az-server-key")
    client = azure_client(gateway, **auth)

    said = client.chat.completions.create(model=DEPLOYMENT, messages=[{"role": "user", "content": "hi"}])
    client.responses.create(model=DEPLOYMENT, input="hi")

    assert said.choices[0].message.content == "ok"
    for request in upstream.seen:
        assert request["headers"]["api-key"] == "az-server-key" and "authorization" not in request["headers"]
