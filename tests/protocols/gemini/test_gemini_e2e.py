"""End to end on the Gemini API: the google-genai SDK (manual and automatic function calling,
streamed and not), a real gateway and a real scripted Gemini upstream, all on loopback."""

from __future__ import annotations

import httpx
import orjson
import pytest
from google.genai import errors, types
from support.gemini_gateway import client_for, start_gemini
from support.gemini_upstream import Said, healthy, stubborn, tools_closed
from support.policies import ladder_policy
from support.rawhttp import send

MODEL = "gemini-test"
FINAL = "I could not finish: the file never changed."
READ_FILE = types.FunctionDeclaration(
    name="read_file",
    description="Read a file.",
    parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def manual_run(client, stream: bool, limit: int = 20) -> tuple[str, int]:
    """The agent loop of an application that runs its functions itself: (answer, executions)."""
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[READ_FILE])])
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="summarize a.txt")])]
    executions = 0
    for _ in range(limit):
        if stream:
            parts = [
                p
                for chunk in client.models.generate_content_stream(model=MODEL, contents=contents, config=config)
                if chunk.candidates and chunk.candidates[0].content
                for p in chunk.candidates[0].content.parts or ()
            ]
        else:
            reply = client.models.generate_content(model=MODEL, contents=contents, config=config)
            parts = list(reply.candidates[0].content.parts or ())
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            return "".join(p.text or "" for p in parts), executions
        contents.append(types.Content(role="model", parts=parts))
        executions += len(calls)
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(name=c.name, response={"result": "the same content"})
                    for c in calls
                ],
            )
        )
    raise AssertionError("the run never ended")


def automatic_run(client, stream: bool) -> tuple[str, int]:
    """The SDK's automatic function calling: it runs ``read_file`` itself."""
    executed = []

    def read_file(path: str) -> str:
        """Read a file."""
        executed.append(path)
        return "the same content"

    config = types.GenerateContentConfig(tools=[read_file])
    if stream:
        text = "".join(
            c.text or ""
            for c in client.models.generate_content_stream(model=MODEL, contents="summarize a.txt", config=config)
        )
    else:
        text = client.models.generate_content(model=MODEL, contents="summarize a.txt", config=config).text
    return text, len(executed)


def parts(body: dict) -> list[dict]:
    return [p for c in body["contents"] for p in c["parts"]]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("run", [manual_run, automatic_run])
def test_a_looping_agent_is_warned_refused_then_ended_with_the_models_answer(start_gemini, run, stream):
    upstream, client, _ = start_gemini(stubborn(final=FINAL))

    answer, executions = run(client, stream)

    assert answer == FINAL  # the model's own answer, written with tools closed
    assert executions == 3 <= 8
    warned, reasked, closed = (upstream.requests[i]["json"] for i in (3, 4, 5))
    assert any("[LoopGuard]" in p.get("text", "") for p in warned["contents"][-1]["parts"])
    refused_call, observation = reasked["contents"][-2:]
    assert refused_call["role"] == "model" and refused_call["parts"][0]["functionCall"]["name"] == "read_file"
    response = observation["parts"][0]["functionResponse"]
    assert response["name"] == "read_file" and "rejected" in response["response"]["error"]
    assert closed["toolConfig"]["functionCallingConfig"]["mode"] == "NONE" and closed["tools"]
    assert len(upstream.requests) == 6
    assert all(
        r["path"].endswith(":streamGenerateContent" if stream else ":generateContent") for r in upstream.requests
    )


SAYING = "Let me read a.txt again."


def chatty(body: dict) -> Said:
    """Loops, saying so next to each call; with tools closed, its final answer."""
    return Said(text=FINAL) if tools_closed(body) else Said(text=SAYING, calls=[("read_file", {"path": "a.txt"})])


def test_a_streamed_stop_reads_exactly_like_the_non_streamed_one(start_gemini):
    """From the warned step on, a round's words are held until its call is judged: the refused
    round's "Let me read a.txt again." never reaches the streaming client either."""
    _, unary_client, _ = start_gemini(chatty)
    unary = manual_run(unary_client, False)
    _, stream_client, _ = start_gemini(chatty)
    streamed = manual_run(stream_client, True)

    assert streamed == unary == (FINAL, 3)


def test_automatic_function_calling_streams_the_executed_steps_words_only(start_gemini):
    """The SDK streams every step's chunks: the three executed steps' words, then the answer;
    the refused steps' words never."""
    _, client, _ = start_gemini(chatty)
    assert automatic_run(client, True) == (SAYING * 3 + FINAL, 3)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("run", [manual_run, automatic_run])
def test_a_healthy_agent_is_relayed_untouched(start_gemini, run, stream):
    upstream, client, _ = start_gemini(healthy(steps=2))

    answer, executions = run(client, stream)

    assert answer.endswith("All files summarized: a short, complete answer.") and executions == 2
    assert all("LoopGuard" not in r["raw"].decode() for r in upstream.requests)
    assert len(upstream.requests) == 3


@pytest.mark.parametrize("stream", [False, True])
def test_a_healthy_reply_goes_out_byte_for_byte(start_gemini, stream):
    upstream, _, gateway = start_gemini(healthy(steps=2))
    body = {
        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
        "tools": [{"functionDeclarations": [{"name": "read_file"}]}],
    }
    path = f"/v1beta/models/{MODEL}:" + ("streamGenerateContent?alt=sse" if stream else "generateContent")

    answer = httpx.post(gateway + path, json=body, headers={"x-goog-api-key": "gm-client"})

    assert answer.status_code == 200 and answer.content == upstream.sent[-1]
    assert upstream.last["raw"] == orjson.dumps(body) and upstream.last["path"] == path.split("?")[0]


def test_the_clients_key_is_forwarded_and_a_server_key_replaces_it(start_gemini):
    upstream, client, gateway = start_gemini(healthy(steps=0))
    client.models.generate_content(model=MODEL, contents="hi")
    assert upstream.last["headers"]["x-goog-api-key"] == "gm-client"

    upstream, _, gateway = start_gemini(healthy(steps=0), gemini_api_key="gm-server")
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    answer = httpx.post(
        gateway + f"/v1beta/models/{MODEL}:generateContent?key=gm-client&x=1",
        json=body,
        headers={"authorization": "Bearer other"},
    )
    assert answer.status_code == 200
    assert upstream.last["headers"]["x-goog-api-key"] == "gm-server"
    assert "authorization" not in upstream.last["headers"] and upstream.last["query"] == "x=1"


@pytest.mark.parametrize("spelling", ["key", "$key", "%24key", "%6Bey", "k%65y"])
def test_a_server_key_replaces_the_query_key_however_its_name_is_spelt(start_gemini, spelling):
    """Google reads ``key``, ``$key`` and ``%6Bey`` as one parameter: each is the client's key,
    and none reaches the provider next to the operator's."""
    upstream, _, gateway = start_gemini(healthy(steps=0), gemini_api_key="gm-server")
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    answer = httpx.post(gateway + f"/v1beta/models/{MODEL}:generateContent?{spelling}=gm-client&x=1", json=body)
    assert answer.status_code == 200
    assert upstream.last["headers"]["x-goog-api-key"] == "gm-server" and upstream.last["query"] == "x=1"


@pytest.mark.parametrize("mode", ["reply", "error"])
@pytest.mark.parametrize("stream", [False, True])
def test_terminate_template_and_error_modes(start_gemini, mode, stream):
    policy = ladder_policy(f"interventions:\n  terminate: {{mode: {mode}}}\n")
    upstream, client, _ = start_gemini(stubborn(final=FINAL), policy)
    if mode == "error" and not stream:
        with pytest.raises(errors.ClientError) as caught:
            manual_run(client, stream)
        assert caught.value.code == 422 and caught.value.status == "FAILED_PRECONDITION"
        return
    if mode == "error":
        with pytest.raises(errors.APIError):
            manual_run(client, stream)
        return
    answer, executions = manual_run(client, stream)
    assert executions == 3 and "read_file" in answer and answer != FINAL
    assert not any(r["json"].get("toolConfig") for r in upstream.requests)  # the template, no answer asked


def test_bad_requests_get_googles_error_shape(start_gemini):
    _, _client, gateway = start_gemini(healthy())
    answer = httpx.post(
        gateway + f"/v1beta/models/{MODEL}:generateContent",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    error = answer.json()["error"]
    assert answer.status_code == 400 and error["code"] == 400 and error["status"] == "INVALID_ARGUMENT"
    assert error["message"]


def test_other_gemini_paths_are_relayed_to_the_gemini_upstream(start_gemini):
    upstream, client, gateway = start_gemini(healthy())
    assert client.models.count_tokens(model=MODEL, contents="hi").total_tokens == 7
    raw = httpx.post(
        gateway + f"/v1beta/models/{MODEL}:streamGenerateContent",
        headers={"x-goog-api-key": "k"},
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    )
    assert raw.status_code == 200 and raw.content == upstream.sent[-1]  # no alt=sse: an array, relayed whole
    assert upstream.last["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent"


def array_run(gateway: str) -> tuple[list, int]:
    """A REST client streaming without ``alt=sse`` (Google answers a JSON array): the agent
    loop of one that runs its function itself: (the last array, executions)."""
    contents = [{"role": "user", "parts": [{"text": "summarize a.txt"}]}]
    tools = [{"functionDeclarations": [{"name": "read_file", "description": "Read a file."}]}]
    executions = 0
    for _ in range(20):
        answer = httpx.post(
            gateway + f"/v1beta/models/{MODEL}:streamGenerateContent",
            headers={"x-goog-api-key": "k"},
            json={"contents": contents, "tools": tools},
            timeout=30,
        )
        assert answer.status_code == 200
        chunks = answer.json()
        said = [p for chunk in chunks for c in chunk["candidates"] for p in c["content"]["parts"]]
        calls = [p for p in said if "functionCall" in p]
        if not calls:
            return chunks, executions
        contents.append({"role": "model", "parts": said})
        executions += len(calls)
        contents.append(
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"result": "the same content"}}}
                    for _ in calls
                ],
            }
        )
    raise AssertionError("the run never ended")


def test_a_stream_without_alt_sse_is_judged_like_any_reply(start_gemini):
    """The array is read whole and its calls judged before any reaches the client: the same
    ladder as the other modes (warned, the 4th call refused and re-asked, the insisting 5th
    ends the run with the model's tools-closed answer), answered as an array."""
    upstream, _, gateway = start_gemini(stubborn(final=FINAL))
    chunks, executions = array_run(gateway)
    assert (
        executions == 3 and "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"]) == FINAL
    )
    warned, reasked, closing = (upstream.requests[i]["json"] for i in (3, 4, 5))
    assert any("[LoopGuard]" in p.get("text", "") for p in warned["contents"][-1]["parts"])
    refused_call, observation = reasked["contents"][-2:]
    assert refused_call["parts"][0]["functionCall"]["name"] == "read_file"
    assert "rejected" in observation["parts"][0]["functionResponse"]["response"]["error"]
    assert closing["toolConfig"]["functionCallingConfig"]["mode"] == "NONE" and len(upstream.requests) == 6
    assert all(r["path"].endswith(":streamGenerateContent") and "alt" not in r["query"] for r in upstream.requests)


def test_an_array_whose_second_call_is_refused_keeps_the_first_in_a_one_element_array(start_gemini):
    """A round of two calls, the second a repeat at reject level: the first goes to the client,
    the second never does; the chunks come back merged into one."""

    def twice(body: dict) -> Said:
        done = sum(1 for c in body["contents"] for p in c["parts"] if "functionResponse" in p)
        if done < 4:
            return Said(calls=[("read_file", {"path": "a.txt"})])
        return Said(text="Reading both.", calls=[("list_dir", {"path": "."}), ("read_file", {"path": "a.txt"})])

    upstream, _, gateway = start_gemini(twice)
    contents = [{"role": "user", "parts": [{"text": "summarize a.txt"}]}]
    for _ in range(4):
        contents.append(
            {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}}]}
        )
        contents.append(
            {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"result": "the same"}}}]}
        )
    answer = httpx.post(
        gateway + f"/v1beta/models/{MODEL}:streamGenerateContent",
        headers={"x-goog-api-key": "k"},
        json={"contents": contents},
        timeout=30,
    )
    assert answer.status_code == 200 and answer.headers["x-loopguard-action"] == "reject"
    chunks = answer.json()
    assert len(chunks) == 1 and len(orjson.loads(upstream.sent[-1])) > 1  # the upstream's chunks, merged
    said = chunks[0]["candidates"][0]["content"]["parts"]
    assert [p["functionCall"]["name"] for p in said if "functionCall" in p] == ["list_dir"]
    assert "".join(p.get("text", "") for p in said) == "Reading both."


def test_a_terminated_stream_without_alt_sse_gets_a_one_element_array(start_gemini):
    policy = ladder_policy("interventions:\n  terminate: {mode: reply}\n")
    upstream, _, gateway = start_gemini(stubborn(final=FINAL), policy)
    chunks, executions = array_run(gateway)
    assert (
        executions == 3
        and len(chunks) == 1
        and "read_file" in chunks[0]["candidates"][0]["content"]["parts"][0]["text"]
    )
    assert not any(r["json"].get("toolConfig") for r in upstream.requests)  # the template, no answer asked


def test_a_healthy_stream_without_alt_sse_is_relayed_byte_for_byte(start_gemini):
    upstream, _, gateway = start_gemini(healthy(steps=2))
    chunks, executions = array_run(gateway)
    assert executions == 2 and len(upstream.requests) == 3
    assert chunks == orjson.loads(upstream.sent[-1])


def test_a_server_side_upstream_error_keeps_its_shape(start_gemini):
    _, client, _ = start_gemini(lambda body: Said(status=503))
    with pytest.raises(errors.ServerError) as caught:
        client.models.generate_content(model=MODEL, contents="hi")
    assert caught.value.code == 503


@pytest.mark.parametrize(
    "target",
    [
        f"/v1beta/models/{MODEL}:GenerateContent",
        f"/V1BETA/models/{MODEL}:streamGenerateContent?alt=sse",
        f"/v1beta/models/{MODEL}:generateContent;x",
        f"/v1/models/{MODEL}:generateContent.",
        f"/v1beta/Models/{MODEL}:generateContent",
        f"/v1/v1beta/models/{MODEL}:generateContent",
    ],
)
def test_another_spelling_of_a_gemini_route_is_refused(start_gemini, target):
    """Google's router (or a proxy before it) may read these as the guarded route: relayed, they
    would reach the model unjudged."""
    upstream, _, gateway = start_gemini(stubborn())
    body = orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    response = send(gateway, "POST", target, [("Content-Type", "application/json")], body)
    assert response.status == 400, (target, response.status, response.body)
    assert "another spelling" in response.json()["error"]["message"]
    assert upstream.requests == []


def test_a_method_gemini_does_not_define_on_its_route_gets_405(start_gemini):
    upstream, _, gateway = start_gemini(stubborn())
    response = send(gateway, "GET", f"/v1beta/models/{MODEL}:generateContent")
    assert response.status == 405 and response.headers["allow"] == "POST"
    assert upstream.requests == []
