"""Every model-calling API of a configured cloud is judged or refused, through a real gateway and a
scripted cloud that answers every model call with the same looping call, driven by the official
SDKs the way agents drive them (each call run, its result sent back):

- guarded by the protocol it speaks: Bedrock's OpenAI-compatible chat and Responses, Vertex's
  OpenAI-compatible chat (``endpoints/openapi``), the Gemini API's own, Gemini on a Vertex
  endpoint (``endpoints/{id}:generateContent``), Azure's v1 deployment routes: the run is ended
  before the agent runs the same call a 5th time;
- refused, naming the setting that would relay it unjudged: the prediction APIs whose bodies
  the gateway does not read (``:rawPredict`` of an endpoint or another publisher, ``:predict``,
  agent engines' ``:query``, Azure's ``extensions/chat/completions``, Bedrock's bidirectional
  stream); relayed once the operator lists them in ``upstream.unjudged_routes``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials
from support.cloud_routes import LOCATED, cloud_gateway
from support.looping_cloud import LoopingCloud

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


@pytest.fixture
def gateway(tmp_path):
    cloud = LoopingCloud()
    with cloud_gateway(tmp_path, cloud) as url:
        yield cloud, url


def chat_agent(client: openai.OpenAI, stream: bool, model: str = "m", limit: int = 12) -> tuple[str, int]:
    """An agent on chat completions: runs every call it gets, answers each with the same
    result; (its final text, the calls it ran)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "summarize a.txt"}]
    ran = 0
    for _ in range(limit):
        if stream:
            text, calls = "", {}
            for chunk in client.chat.completions.create(model=model, messages=messages, tools=TOOLS, stream=True):
                delta = chunk.choices[0].delta if chunk.choices else None
                text += (delta.content or "") if delta else ""
                for entry in (delta.tool_calls or []) if delta else []:
                    call = calls.setdefault(entry.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = call["id"] or entry.id or ""
                    call["name"] += entry.function.name or "" if entry.function else ""
                    call["arguments"] += entry.function.arguments or "" if entry.function else ""
            found = list(calls.values())
        else:
            message = client.chat.completions.create(model=model, messages=messages, tools=TOOLS).choices[0].message
            text = message.content or ""
            found = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in message.tool_calls or ()
            ]
        if not found:
            return text, ran
        ran += len(found)
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in found
                ],
            }
        )
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "the same content"} for c in found]
    raise AssertionError("the run never ended")


def responses_agent(client: openai.OpenAI, stream: bool, limit: int = 12) -> tuple[str, int]:
    items: list[Any] = [{"role": "user", "content": "summarize a.txt"}]
    tools = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    ran = 0
    for _ in range(limit):
        if stream:
            with client.responses.stream(model="m", input=items, tools=tools) as events:
                reply = events.get_final_response()
        else:
            reply = client.responses.create(model="m", input=items, tools=tools)
        calls = [o for o in reply.output if o.type == "function_call"]
        if not calls:
            return reply.output_text, ran
        ran += len(calls)
        for call in calls:
            items.append(
                {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            )
            items.append({"type": "function_call_output", "call_id": call.call_id, "output": "the same content"})
    raise AssertionError("the run never ended")


def stopped(answer: tuple[str, int]) -> None:
    """Warned at 3, the 4th refused and re-asked, the 5th never run: the run ends in the
    gateway's words."""
    text, ran = answer
    assert ran == 3 and "[LoopGuard]" in text, answer


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize(
    "base",
    [
        "/bedrock/openai/v1",
        "/bedrock/v1",
        f"/vertex{LOCATED}/endpoints/openapi",
        f"/vertex{LOCATED}/endpoints/4567",
        "/v1beta/openai",
        "/openai/v1/deployments/gpt-4.1",
    ],
)
def test_an_openai_sdk_agent_on_a_clouds_chat_api_is_stopped(gateway, base, stream):
    cloud, url = gateway
    client = openai.OpenAI(base_url=url + base, api_key="client-key", max_retries=0, timeout=20)
    stopped(chat_agent(client, stream))
    assert all(s.family == "chat" for s in cloud.model_calls)


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_an_openai_sdk_agent_on_bedrocks_responses_api_is_stopped(gateway, stream):
    cloud, url = gateway
    client = openai.OpenAI(base_url=url + "/bedrock/openai/v1", api_key="client-key", max_retries=0, timeout=20)
    stopped(responses_agent(client, stream))
    assert {s.routed for s in cloud.model_calls} == {"/openai/v1/responses"}


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_google_genai_agent_on_a_vertex_endpoint_is_stopped(gateway, stream):
    """google-genai names a deployed endpoint as its model (``projects/.../endpoints/{id}``):
    ``:generateContent`` there is Gemini's, judged as on a publisher model."""
    cloud, url = gateway
    client = genai.Client(
        vertexai=True,
        project="proj",
        location="us-east5",
        credentials=Credentials(token="client-token"),
        http_options=types.HttpOptions(base_url=url + "/vertex/", timeout=20_000),
    )
    model = "projects/proj/locations/us-east5/endpoints/4567"
    declared = types.FunctionDeclaration(name="read_file", parameters_json_schema={"type": "object"})
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declared])])
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="summarize a.txt")])]
    ran = 0
    for _ in range(12):
        if stream:
            chunks = list(client.models.generate_content_stream(model=model, contents=contents, config=config))
            parts = [p for c in chunks if c.candidates for p in c.candidates[0].content.parts or ()]
        else:
            parts = list(
                client.models.generate_content(model=model, contents=contents, config=config)
                .candidates[0]
                .content.parts
                or ()
            )
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            break
        ran += len(calls)
        contents.append(types.Content(role="model", parts=parts))
        responses = [types.Part.from_function_response(name=c.name, response={"result": "same"}) for c in calls]
        contents.append(types.Content(role="user", parts=responses))
    assert ran == 3 and "[LoopGuard]" in "".join(p.text or "" for p in parts)
    assert all(
        s.routed.endswith(("/endpoints/4567:generateContent", "/endpoints/4567:streamGenerateContent"))
        for s in cloud.model_calls
    )


UNJUDGED = [
    (f"/vertex{LOCATED}/endpoints/4567:rawPredict", "google"),
    (f"/vertex{LOCATED}/endpoints/4567:streamRawPredict", "google"),
    (f"/vertex{LOCATED}/publishers/mistralai/models/mistral-large:rawPredict", "google"),
    (f"/vertex{LOCATED}/publishers/meta/models/llama-4:streamRawPredict", "google"),
    (f"/vertex{LOCATED}/endpoints/4567:predict", "google"),
    (f"/vertex{LOCATED}/reasoningEngines/9:streamQuery", "google"),
    (f"/vertex{LOCATED}/endpoints/4567/invoke/v1/chat", "google"),
    (f"/vertex{LOCATED}/endpoints/4567:RAWPREDICT", "google"),
    ("/openai/deployments/gpt-4.1/extensions/chat/completions?api-version=2024-02-01", "openai"),
    ("/openai/v1/deployments/gpt-4.1/extensions/chat/completions", "openai"),
    ("/bedrock/model/amazon.nova-sonic-v1:0/invoke-with-bidirectional-stream", "bedrock"),
]


def error_of(answer: httpx.Response, shape: str) -> str:
    """The refusal's message, read in the shape the protocol's clients read."""
    body = answer.json()
    if shape == "google":
        assert body["error"]["code"] == 403 and body["error"]["status"] == "PERMISSION_DENIED"
        return body["error"]["message"]
    if shape == "bedrock":
        assert answer.headers["x-amzn-errortype"].startswith("AccessDeniedException")
        return body["message"]
    assert body["error"]["code"] == "route_not_judged"
    return body["error"]["message"]


@pytest.mark.parametrize(("path", "shape"), UNJUDGED)
def test_a_model_call_the_gateway_cannot_judge_is_refused_naming_the_setting(gateway, path, shape):
    cloud, url = gateway
    answer = httpx.post(url + path, content=json.dumps({"instances": [{"prompt": "hi"}]}), timeout=20)
    assert answer.status_code == 403
    assert "upstream.unjudged_routes" in error_of(answer, shape)
    assert cloud.seen == []  # nothing reached the cloud


def test_an_operator_may_relay_such_a_call_unjudged(tmp_path: Path):
    cloud = LoopingCloud()
    route = "POST /vertex/{version}/projects/{p}/locations/{l}/endpoints/{e}:rawPredict"
    with cloud_gateway(tmp_path, cloud, unjudged_routes=[route]) as url:
        relayed = httpx.post(url + f"/vertex{LOCATED}/endpoints/4567:rawPredict", json={"instances": []}, timeout=20)
        refused = httpx.post(url + f"/vertex{LOCATED}/endpoints/4567:predict", json={"instances": []}, timeout=20)
    assert relayed.status_code == 404 and [s.routed for s in cloud.seen] == [f"{LOCATED}/endpoints/4567:rawPredict"]
    assert refused.status_code == 403
