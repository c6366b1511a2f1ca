"""n > 1: every choice's proposed calls are judged, not only the first choice's."""

import httpx
import orjson
import pytest
from support.seen import observations
from support.upstream import Reply
from support.waiting import wait_for

from gateway.audit.memory_sink import MemorySink

from .bodies import looping_history, post

LOOPING = {"id": "c9", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
FRESH = {"id": "c8", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}


def completion(*messages: dict) -> bytes:
    return orjson.dumps(
        {
            "id": "chatcmpl-n",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": i,
                    "message": m,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if m.get("tool_calls") else "stop",
                }
                for i, m in enumerate(messages)
            ],
        }
    )


def calls_message(*calls: dict) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def test_a_looping_call_in_a_later_choice_is_withheld(start_guarded):
    reply = completion({"role": "assistant", "content": "done"}, calls_message(LOOPING))
    upstream, client, _ = start_guarded(lambda r: Reply(body=reply))
    response = post(client, orjson.dumps({"model": "m", "n": 2, "messages": looping_history()}))
    assert response.headers["x-loopguard-action"] == "reject"
    first, second = response.json()["choices"]
    assert first["message"]["content"] == "done"  # untouched
    assert "tool_calls" not in second["message"] and second["finish_reason"] == "stop"
    assert len(upstream.requests) == 1  # one choice still answers: nothing to re-ask


def test_each_choice_is_judged_on_its_own(start_guarded):
    reply = completion(calls_message(FRESH, LOOPING), calls_message(FRESH))
    _upstream, client, _ = start_guarded(lambda r: Reply(body=reply))
    response = post(client, orjson.dumps({"model": "m", "n": 2, "messages": looping_history()}))
    first, second = response.json()["choices"]
    assert [c["function"]["name"] for c in first["message"]["tool_calls"]] == ["list_dir"]
    assert second["message"]["tool_calls"] == [FRESH]  # list_dir again, in its own choice: fine


def sse(chunks: list[dict]) -> list[bytes]:
    return [b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]


def chunk(index: int, delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }


def two_choice_stream(second_call: dict) -> list[bytes]:
    entry = {"index": 0, **second_call}
    return sse(
        [
            chunk(0, {"role": "assistant", "content": ""}),
            chunk(1, {"role": "assistant", "content": ""}),
            chunk(0, {"content": "done"}),
            chunk(1, {"tool_calls": [entry]}),
            chunk(0, {}, "stop"),
            chunk(1, {}, "tool_calls"),
        ]
    )


def read_stream(response) -> list[dict]:
    return [
        orjson.loads(line[6:])
        for line in response.text.split("\n")
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


@pytest.mark.parametrize("loops", [True, False])
def test_streamed_choices_are_each_judged(start_guarded, loops):
    stream = two_choice_stream(LOOPING if loops else FRESH)
    _upstream, client, _ = start_guarded(lambda r: Reply(raw_stream=stream))
    payload = {"model": "m", "n": 2, "stream": True, "messages": looping_history()}
    response = post(client, orjson.dumps(payload))
    chunks = read_stream(response)
    calls = [c for ch in chunks for c in ch["choices"] if c["delta"].get("tool_calls")]
    finishes = {c["index"]: c["finish_reason"] for ch in chunks for c in ch["choices"] if c["finish_reason"]}
    if loops:
        assert calls == [] and finishes == {0: "stop", 1: "stop"}
        assert ": loopguard action=reject" in response.text
    else:  # nothing refused: the upstream's bytes, exactly
        assert response.content == b"".join(stream)


def two_answers(stream: bool, *messages: dict) -> Reply:
    if not stream:
        return Reply(body=completion(*messages))
    deltas = [
        {"tool_calls": [{"index": 0, **m["tool_calls"][0]}]} if m.get("tool_calls") else {"content": m["content"]}
        for m in messages
    ]
    chunks = [chunk(i, {"role": "assistant", "content": ""}) for i in range(len(deltas))]
    chunks += [chunk(i, d) for i, d in enumerate(deltas)]
    chunks += [chunk(i, {}, "tool_calls" if "tool_calls" in d else "stop") for i, d in enumerate(deltas)]
    return Reply(raw_stream=sse(chunks))


@pytest.mark.parametrize("stream", [False, True])
def test_a_round_refused_in_every_choice_is_asked_again_streamed_or_not(start_guarded, stream):
    """Every choice lost its calls: nothing is left to send, so the model is asked again with
    the vetoed call and the observation, as for one choice; a held stream's headers say so."""

    def respond(request: dict) -> Reply:
        if observations(request):
            return two_answers(
                stream, {"role": "assistant", "content": "done"}, {"role": "assistant", "content": "done too"}
            )
        return two_answers(stream, calls_message(LOOPING), calls_message(LOOPING))

    upstream, client, _ = start_guarded(respond)
    response = post(client, orjson.dumps({"model": "m", "n": 2, "stream": stream, "messages": looping_history()}))
    assert response.headers["x-loopguard-action"] == "reject"
    if stream:
        texts: dict[int, str] = {}
        for piece in read_stream(response):
            for c in piece["choices"]:
                assert not c["delta"].get("tool_calls")
                texts[c["index"]] = texts.get(c["index"], "") + (c["delta"].get("content") or "")
        assert ": loopguard action=reject" in response.text and response.text.count("data: [DONE]") == 1
    else:
        texts = {c["index"]: c["message"]["content"] for c in response.json()["choices"]}
    assert texts == {0: "done", 1: "done too"}
    assert len(upstream.requests) == 2 and observations(upstream.requests[1]["json"])


def test_a_client_leaving_a_held_stream_before_its_headers_stops_the_upstream(start_guarded):
    """Several streamed choices are held whole and their headers wait for the decision: a
    client that gives up meanwhile still stops the upstream's generation."""
    events = [chunk(i % 2, {"content": "y"}) for i in range(200)]
    upstream, client, _ = start_guarded(lambda r: Reply(raw_stream=sse(events), chunk_delay=0.03))
    payload = {"model": "m", "n": 2, "stream": True, "messages": looping_history()}
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=0.5) as http:
        with http.stream(
            "POST",
            client.gateway_url + "/v1/chat/completions",
            content=orjson.dumps(payload),
            headers={"content-type": "application/json", "authorization": "Bearer sk-test"},
        ):
            pass
    assert wait_for(lambda: upstream.cancelled_streams == 1, timeout=3.0) and upstream.finished_streams == 0


def test_a_failed_re_ask_of_several_streamed_choices_still_ends_the_stream_well_formed(start_guarded):
    """The withheld round goes out without its refused calls, as before re-asks existed."""

    def respond(request: dict) -> Reply:
        if observations(request):
            return Reply(status=500)
        return two_answers(True, calls_message(LOOPING), calls_message(LOOPING))

    upstream, client, _ = start_guarded(respond)
    response = post(client, orjson.dumps({"model": "m", "n": 2, "stream": True, "messages": looping_history()}))
    chunks = read_stream(response)
    assert not [c for ch in chunks for c in ch["choices"] if c["delta"].get("tool_calls")]
    assert {c["index"]: c["finish_reason"] for ch in chunks for c in ch["choices"] if c["finish_reason"]} == {
        0: "stop",
        1: "stop",
    }
    assert response.text.count("data: [DONE]") == 1 and len(upstream.requests) == 2


def parallel_round_stream() -> list[bytes]:
    """Choice 0: list_dir then read_file (a parallel round); choice 1: read_file."""
    entries = [{"index": i, **call} for i, call in enumerate((FRESH, LOOPING))]
    return sse(
        [
            chunk(0, {"role": "assistant", "content": None}),
            chunk(1, {"role": "assistant", "content": None}),
            chunk(0, {"tool_calls": entries[:1]}),
            chunk(1, {"tool_calls": [{"index": 0, **LOOPING}]}),
            chunk(0, {"tool_calls": entries[1:]}),
            chunk(0, {}, "tool_calls"),
            chunk(1, {}, "tool_calls"),
        ]
    )


@pytest.mark.parametrize("executed", [3, 4])  # the proposed read_file: reject-level, terminate-level
@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_call_in_a_later_choice_reports_what_the_client_received(start_guarded, stream, executed):
    """The first choice keeps a fresh call: the run goes on, each refused call (terminate-level
    or not) is left out of its choice, and the headers say ``reject``, streamed too: a stream of
    several choices is held whole and its headers wait for the decision, not the warned request."""
    reply = (
        Reply(raw_stream=parallel_round_stream())
        if stream
        else Reply(body=completion(calls_message(FRESH, LOOPING), calls_message(LOOPING)))
    )
    upstream, client, _ = start_guarded(lambda r: reply)
    audit = MemorySink()
    client.gateway_app.state.gateway.audit.add(audit)
    kwargs = {"model": "m", "n": 2, "messages": looping_history(executed)}
    if stream:
        with client.chat.completions.with_streaming_response.create(stream=True, **kwargs) as response:
            headers = response.headers
            calls = [c for chunk in response.parse() for c in chunk.choices if c.delta.tool_calls]
        names = [(c.index, e.function.name) for c in calls for e in c.delta.tool_calls]
        assert names == [(0, "list_dir")]  # both looping calls were dropped
    else:
        raw = client.chat.completions.with_raw_response.create(**kwargs)
        headers, first, second = raw.headers, *raw.parse().choices
        assert [c.function.name for c in first.message.tool_calls] == ["list_dir"]
        assert not second.message.tool_calls and second.finish_reason == "stop"
    assert headers["x-loopguard-action"] == "reject"
    assert headers["x-loopguard-detector"] == "no_progress"
    assert "x-loopguard-terminate" not in headers
    responded = [(e.action, e.tool) for e in audit.events if e.phase == "response"]
    assert responded == [("reject", "read_file")] * 2  # one per choice, each left out of it
    assert len(upstream.requests) == 1


SAYING = "Let me read a.txt again."


def said_and_called(stream: bool, *choices: tuple[str, dict | None]) -> Reply:
    """Each choice's words, then its call (None: words only), as the upstream answers them."""
    if not stream:
        return Reply(
            body=completion(
                *(
                    {"role": "assistant", "content": text, **({"tool_calls": [call]} if call else {})}
                    for text, call in choices
                )
            )
        )
    chunks = [chunk(i, {"role": "assistant", "content": ""}) for i in range(len(choices))]
    chunks += [chunk(i, {"content": text}) for i, (text, _) in enumerate(choices)]
    chunks += [chunk(i, {"tool_calls": [{"index": 0, **call}]}) for i, (_, call) in enumerate(choices) if call]
    chunks += [chunk(i, {}, "tool_calls" if call else "stop") for i, (_, call) in enumerate(choices)]
    return Reply(raw_stream=sse(chunks))


def choice_texts(response: httpx.Response, stream: bool) -> dict[int, str]:
    if not stream:
        return {c["index"]: c["message"]["content"] for c in response.json()["choices"]}
    texts: dict[int, str] = {}
    for piece in read_stream(response):
        for c in piece["choices"]:
            texts[c["index"]] = texts.get(c["index"], "") + (c["delta"].get("content") or "")
    return texts


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_rounds_words_are_never_shown_in_any_choice(start_guarded, stream):
    """At warn level, a round refused in every choice is asked again: the words written next to
    the refused calls never reach the client, streamed or not (a stream of several choices is
    held until all of it is judged), and the stream's texts are the reply's."""

    def respond(request: dict) -> Reply:
        if observations(request):
            return said_and_called(stream, ("done", None), ("done too", None))
        return said_and_called(stream, (SAYING, LOOPING), (SAYING, LOOPING))

    upstream, client, _ = start_guarded(respond)
    response = post(client, orjson.dumps({"model": "m", "n": 2, "stream": stream, "messages": looping_history()}))
    assert SAYING not in response.text
    assert choice_texts(response, stream) == {0: "done", 1: "done too"}
    assert len(upstream.requests) == 2


@pytest.mark.parametrize("stream", [False, True])
def test_a_choice_that_keeps_its_call_keeps_the_round_and_its_words(start_guarded, stream):
    """One choice keeps a fresh call: the round is not asked again, and each choice reads the
    same streamed or not (the refused choice's words stay, its call is left out)."""
    reply = said_and_called(stream, ("Listing.", FRESH), (SAYING, LOOPING))
    upstream, client, _ = start_guarded(lambda r: reply)
    response = post(client, orjson.dumps({"model": "m", "n": 2, "stream": stream, "messages": looping_history()}))
    assert choice_texts(response, stream) == {0: "Listing.", 1: SAYING}
    assert response.headers["x-loopguard-action"] == "reject" and len(upstream.requests) == 1
