"""A looping Gemini agent is judged whatever shape its upstream answers in (events, one JSON
object, a JSON array), however its query spells ``alt``, and on every generate route (base and
tuned models, ``v1beta``, ``v1`` and ``v1alpha``): the 4th identical call never reaches it."""

from __future__ import annotations

import httpx
import orjson
import pytest
from google import genai
from google.genai import types
from support.gemini_gateway import start_gemini
from support.gemini_upstream import stubborn

FINAL = "I could not finish: the file never changed."
READ_FILE = types.FunctionDeclaration(
    name="read_file",
    description="Read a file.",
    parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
SHAPES = ("sse", "object", "array")


def run(client, model: str, stream: bool, limit: int = 12) -> tuple[str, int]:
    """An application that runs its functions itself, through the google-genai SDK: (its
    answer, the calls it ran)."""
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[READ_FILE])])
    contents = [types.Content(role="user", parts=[types.Part(text="summarize a.txt")])]
    ran = 0
    for _ in range(limit):
        if stream:
            chunks = client.models.generate_content_stream(model=model, contents=contents, config=config)
            parts = [
                p
                for c in chunks
                if c.candidates and c.candidates[0].content
                for p in c.candidates[0].content.parts or ()
            ]
        else:
            reply = client.models.generate_content(model=model, contents=contents, config=config)
            parts = list(reply.candidates[0].content.parts or ())
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            return "".join(p.text or "" for p in parts), ran
        ran += len(calls)
        contents.append(types.Content(role="model", parts=parts))
        contents.append(
            types.Content(
                role="user",
                parts=[types.Part.from_function_response(name=c.name, response={"result": "same"}) for c in calls],
            )
        )
    raise AssertionError("the run never ended")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
@pytest.mark.parametrize("answers", SHAPES)
def test_an_sdk_agent_is_stopped_whatever_shape_the_upstream_answers_in(start_gemini, answers, stream):
    """The SDK reads one JSON object off a stream request as a chunk, and an event stream off
    a unary one: relayed unjudged, the looping call would reach it every time."""
    if answers == "array" or (answers == "sse" and not stream):
        pytest.skip("the SDK reads neither a JSON array nor events off a unary call: the raw requests below do")
    upstream, client, _ = start_gemini(stubborn(final=FINAL), answers=answers)
    answer, ran = run(client, "gemini-test", stream)
    assert (answer, ran) == (FINAL, 3)  # warned at 3, the 4th refused, then the model's own answer
    assert any("rejected" in orjson.dumps(r["json"]).decode() for r in upstream.requests)


def looping_contents(times: int = 3) -> list[dict]:
    contents: list[dict] = [{"role": "user", "parts": [{"text": "summarize a.txt"}]}]
    for _ in range(times):
        contents.append(
            {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}}]}
        )
        contents.append(
            {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"result": "same"}}}]}
        )
    return contents


def parts_in(content: bytes) -> list[dict]:
    """The parts a client reads off a reply, whatever its shape (events, an object, an array)."""
    try:
        found = orjson.loads(content)
    except orjson.JSONDecodeError:
        found = [orjson.loads(line[5:]) for line in content.splitlines() if line.startswith(b"data:")]
    chunks = found if isinstance(found, list) else [found]
    return [p for chunk in chunks for c in chunk.get("candidates", []) for p in c["content"]["parts"]]


STREAM = "streamGenerateContent"
QUERIES = {
    "last alt wins (sse)": (STREAM, "alt=json&alt=sse"),
    "last alt wins (json)": (STREAM, "alt=sse&alt=json"),
    "percent-encoded value": (STREAM, "alt=%73se"),
    "$alt": (STREAM, "%24alt=sse"),
    "no alt": (STREAM, ""),
    "unary": ("generateContent", ""),
}


@pytest.mark.parametrize("answers", SHAPES)
@pytest.mark.parametrize("method, query", QUERIES.values(), ids=QUERIES.keys())
def test_the_4th_identical_call_is_judged_however_alt_is_spelt(start_gemini, method, query, answers):
    """Whatever the gateway reads ``alt`` as, and whatever shape the upstream then answers in,
    the reply is judged: never relayed with the call, never a gateway 502."""
    upstream, _, url = start_gemini(stubborn(final=FINAL), answers=answers)
    response = httpx.post(
        f"{url}/v1beta/models/gemini-test:{method}?{query}",
        json={"contents": looping_contents(), "tools": [{"functionDeclarations": [{"name": "read_file"}]}]},
        headers={"x-goog-api-key": "gm-client"},
        timeout=20,
    )
    assert response.status_code == 200, response.text
    parts = parts_in(response.content)
    assert not [p for p in parts if "functionCall" in p]
    assert "".join(p.get("text", "") for p in parts) == FINAL
    assert any("rejected" in orjson.dumps(r["json"]).decode() for r in upstream.requests)
    if answers != "sse":  # a reply read whole: its headers name the decision
        assert response.headers["x-loopguard-action"] == "terminate"
    asked_events = query in ("alt=json&alt=sse", "alt=%73se", "%24alt=sse")
    if asked_events:  # the final reply is the stream google-genai asked for, however it came
        assert response.headers["content-type"].startswith("text/event-stream")
    elif answers == "array":  # else it takes the shape the upstream's came in
        assert isinstance(response.json(), list)


@pytest.mark.parametrize("method", [STREAM, "generateContent"])
def test_one_json_reply_labelled_as_events_never_reaches_the_client(start_gemini, method):
    _, _, url = start_gemini(stubborn(final=FINAL), answers="mislabelled")
    response = httpx.post(
        f"{url}/v1beta/models/gemini-test:{method}?alt=sse",
        json={"contents": looping_contents(), "tools": [{"functionDeclarations": [{"name": "read_file"}]}]},
        headers={"x-goog-api-key": "gm-client"},
        timeout=20,
    )
    assert response.status_code == 200 and b"not an event stream" in response.content
    assert b"functionCall" not in response.content


ROUTES = [
    ("v1beta", "tunedModels/my-tuned"),
    ("v1", "tunedModels/my-tuned"),
    ("v1alpha", "models/gemini-test"),
    ("v1alpha", "tunedModels/my-tuned"),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
@pytest.mark.parametrize("version, model", ROUTES)
def test_every_generate_route_is_guarded(start_gemini, version, model, stream):
    upstream, _, url = start_gemini(stubborn(final=FINAL))
    client = genai.Client(
        api_key="gm-client", http_options=types.HttpOptions(base_url=url, api_version=version, timeout=20_000)
    )
    assert run(client, model, stream) == (FINAL, 3)
    method = "streamGenerateContent" if stream else "generateContent"
    assert {r["path"] for r in upstream.requests} == {f"/{version}/{model}:{method}"}


@pytest.mark.parametrize(
    "path",
    [
        "/v1beta/TunedModels/my-tuned:generateContent",
        "/v1alpha/tunedmodels/my-tuned:streamGenerateContent",
        "/V1alpha/models/gemini-test:generateContent",
    ],
)
def test_another_spelling_of_a_tuned_or_v1alpha_route_is_refused(start_gemini, path):
    upstream, _, url = start_gemini(stubborn(final=FINAL))
    response = httpx.post(
        url + path, json={"contents": looping_contents(5)}, headers={"x-goog-api-key": "gm-client"}, timeout=20
    )
    assert response.status_code == 400 and "another spelling" in response.text
    assert upstream.requests == []
