"""End to end on Gemini on Vertex AI: google-genai with ``vertexai=True`` (manual and automatic
function calling, streamed and not) aimed at the gateway's ``/vertex/``, a real gateway and a
scripted Vertex upstream checking the bearer token of every request, all on loopback. The
token is the client's (forwarded) or, with ``upstream.vertex_credentials: gateway``, the
gateway's own, from a service account whose token endpoint is scripted."""

from __future__ import annotations

import pytest
from google.genai import types
from support.gemini_upstream import healthy, stubborn
from support.servers import serve
from support.vertex_gateway import genai_client, start_vertex
from support.vertex_upstream import GEMINI, VertexUpstream

FINAL = "I could not finish: the file never changed."
READ_FILE = types.FunctionDeclaration(
    name="read_file",
    description="Read a file.",
    parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
CREDENTIALS = ("client", "gateway")


def manual_run(client, stream: bool, limit: int = 20) -> tuple[str, int]:
    """An application running its functions itself: (answer, executions)."""
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[READ_FILE])])
    contents = [types.Content(role="user", parts=[types.Part(text="summarize a.txt")])]
    executions = 0
    for _ in range(limit):
        if stream:
            chunks = client.models.generate_content_stream(model=GEMINI, contents=contents, config=config)
            parts = [
                p
                for c in chunks
                if c.candidates and c.candidates[0].content
                for p in c.candidates[0].content.parts or ()
            ]
        else:
            reply = client.models.generate_content(model=GEMINI, contents=contents, config=config)
            parts = list(reply.candidates[0].content.parts or ())
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            return "".join(p.text or "" for p in parts), executions
        contents.append(types.Content(role="model", parts=parts))
        executions += len(calls)
        results = [types.Part.from_function_response(name=c.name, response={"result": "same"}) for c in calls]
        contents.append(types.Content(role="user", parts=results))
    raise AssertionError("the run never ended")


def automatic_run(client, stream: bool) -> tuple[str, int]:
    """The SDK's automatic function calling: it runs ``read_file`` itself."""
    executed = []

    def read_file(path: str) -> str:
        """Read a file."""
        executed.append(path)
        return "the same content"

    config = types.GenerateContentConfig(tools=[read_file])
    models = client.models
    if stream:
        chunks = models.generate_content_stream(model=GEMINI, contents="summarize a.txt", config=config)
        return "".join(c.text or "" for c in chunks), len(executed)
    return models.generate_content(model=GEMINI, contents="summarize a.txt", config=config).text, len(executed)


@pytest.mark.parametrize("credentials", CREDENTIALS)
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("run", [manual_run, automatic_run])
def test_a_looping_agent_is_ended_with_the_models_own_answer(start_vertex, run, stream, credentials):
    started = start_vertex(gemini=stubborn(final=FINAL), credentials=credentials)
    client = started.genai()

    answer, executions = run(client, stream)

    assert answer == FINAL and executions == 3 <= 8  # warned, refused, ended with tools closed
    cloud = started.upstream
    closed = cloud.google.last["json"]
    assert closed["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"
    method = ":streamGenerateContent" if stream else ":generateContent"
    assert all(p.startswith("/v1beta1/projects/proj/locations/us-central1/") for p in cloud.paths)
    assert all(p.endswith(method) for p in cloud.paths)
    assert set(cloud.tokens) == {cloud.token}  # every request, re-asks and the final answer too
    if started.tokens is not None:
        assert started.tokens.issued == ["ya29.gateway-1"]  # one token for the whole run


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("run", [manual_run, automatic_run])
def test_a_healthy_agent_reaches_the_cloud_byte_for_byte_and_gets_the_same_answer(start_vertex, run, stream):
    direct = VertexUpstream(gemini=healthy(steps=3))
    with serve(direct.app) as cloud:
        alone = run(genai_client(cloud + "/"), stream)
    started = start_vertex(gemini=healthy(steps=3))

    guarded = run(started.genai(), stream)

    assert guarded == alone and alone[0].endswith("All files summarized: a short, complete answer.")
    assert alone[1] == 3
    assert [r["raw"] for r in started.upstream.google.requests] == [r["raw"] for r in direct.google.requests]
    assert started.upstream.paths == direct.paths
    assert started.upstream.google.sent == direct.google.sent


def test_with_gateway_credentials_a_client_sending_no_token_is_served(start_vertex):
    """A client with its own auth skipped sends a token the cloud would refuse, or none."""
    started = start_vertex(gemini=healthy(steps=1), credentials="gateway")

    answer = manual_run(started.genai(token="not-a-google-token"), stream=False)

    assert answer[0].startswith("All files summarized")
    assert set(started.upstream.tokens) == {"ya29.gateway-1"}
