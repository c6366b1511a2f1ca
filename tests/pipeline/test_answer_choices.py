"""Terminate mode answer with ``n > 1``: the client asked for several choices, so the final
answer has them too, on the request path (the history already crossed terminate) and after a
veto, streamed and not. Each choice the model wrote is its own answer; when the model cannot
answer (a choice calls a tool again), every choice carries the template."""

from __future__ import annotations

import orjson
import pytest
from support.agent import TOOLS
from support.seen import observations
from support.upstream import Reply

from .bodies import looping_history, post
from .test_answer import TEMPLATE, policy
from .test_choices import LOOPING, calls_message, chunk, completion, read_stream, sse


def paths() -> list:
    """(path, stream) cases: the history already crossed terminate, call 5 is proposed, or call 4
    is proposed (vetoed, the re-ask's call 5 ends the run)."""
    return [
        pytest.param(path, stream, id=f"{path}-{'stream' if stream else 'unary'}")
        for path in PATHS
        for stream in (False, True)
    ]


ANSWERS = ("First take: a.txt never changed.", "Second take: the summary is missing.")
PATHS = {"request": 5, "response": 4, "reasked": 3}  # executed calls before the request


def choices_stream(*deltas: dict) -> list[bytes]:
    """One chunk per (choice, delta) in turn, then each choice's finish."""
    chunks = [chunk(i, {"role": "assistant", "content": ""}) for i in range(len(deltas))]
    chunks += [chunk(i, delta) for i, delta in enumerate(deltas)]
    chunks += [chunk(i, {}, "tool_calls" if "tool_calls" in delta else "stop") for i, delta in enumerate(deltas)]
    return sse(chunks)


def model(closed_answers: list[dict], stream: bool):
    """Loops with n choices; asked with tools closed, answers with ``closed_answers``."""

    def respond(request: dict) -> Reply:
        if request.get("tool_choice") != "none":
            if stream:
                return Reply(
                    raw_stream=choices_stream(
                        {"tool_calls": [{"index": 0, **LOOPING}]}, {"tool_calls": [{"index": 0, **LOOPING}]}
                    )
                )
            return Reply(body=completion(calls_message(LOOPING), calls_message(LOOPING)))
        if stream:
            return Reply(
                raw_stream=choices_stream(
                    *[
                        {"tool_calls": [{"index": 0, **LOOPING}]} if m.get("tool_calls") else {"content": m["content"]}
                        for m in closed_answers
                    ]
                )
            )
        return Reply(body=completion(*closed_answers))

    return respond


def final_choices(client, path: str, stream: bool) -> tuple[dict[int, str], dict[int, str], object]:
    """(text by choice, finish_reason by choice, the response)."""
    payload = {"model": "m", "n": 2, "messages": looping_history(PATHS[path]), "tools": TOOLS}
    response = post(client, orjson.dumps({**payload, "stream": stream}))
    assert response.status_code == 200 and response.headers["x-loopguard-action"] == "terminate"
    if not stream:
        found = response.json()["choices"]
        assert all("tool_calls" not in c["message"] for c in found)
        return (
            {c["index"]: c["message"]["content"] for c in found},
            {c["index"]: c["finish_reason"] for c in found},
            response,
        )
    texts: dict[int, str] = {}
    finishes: dict[int, str] = {}
    for piece in read_stream(response):
        for c in piece["choices"]:
            assert not c["delta"].get("tool_calls")
            texts[c["index"]] = texts.get(c["index"], "") + (c["delta"].get("content") or "")
            if c["finish_reason"]:
                assert c["index"] not in finishes, f"choice {c['index']} finished twice"
                finishes[c["index"]] = c["finish_reason"]
    assert response.text.rstrip().endswith("data: [DONE]")
    return texts, finishes, response


@pytest.mark.parametrize(("path", "stream"), paths())
def test_every_choice_is_the_models_own_answer(start_guarded, path, stream):
    answers = [{"role": "assistant", "content": text} for text in ANSWERS]
    upstream, client, _ = start_guarded(model(answers, stream), policy())
    texts, finishes, response = final_choices(client, path, stream)
    assert texts == dict(enumerate(ANSWERS)) and finishes == {0: "stop", 1: "stop"}
    assert "terminate=reply" not in response.text
    if not stream:
        assert response.headers["x-loopguard-terminate"] == "answer"
    asked = upstream.last["json"]
    assert asked["tool_choice"] == "none" and asked["n"] == 2
    if path == "reasked":  # call 4 vetoed in both choices: re-asked once, call 5 ends the run
        assert len(upstream.requests) == 3
        assert observations(upstream.requests[1]["json"]) and "tool_choice" not in upstream.requests[1]["json"]


@pytest.mark.parametrize(("path", "stream"), paths())
def test_a_choice_calling_a_tool_again_gives_every_choice_the_template(start_guarded, path, stream):
    answers = [{"role": "assistant", "content": ANSWERS[0]}, calls_message(LOOPING)]
    _upstream, client, _ = start_guarded(model(answers, stream), policy())
    texts, finishes, response = final_choices(client, path, stream)
    assert set(texts) == set(finishes) == {0, 1} and set(finishes.values()) == {"stop"}
    for text in texts.values():
        assert TEMPLATE in text and "read_file" in text
    if not stream:
        assert response.headers["x-loopguard-terminate"] == "reply"
    else:
        assert "terminate=reply" in response.text


def test_a_streamed_answer_cut_by_the_deadline_is_the_template_in_every_choice(start_guarded):
    """Several streamed choices are held whole: when the deadline cuts them, nothing of them
    was sent, and nothing of them may follow the template."""
    slow = choices_stream(*[{"content": text} for text in ANSWERS])

    def respond(request: dict) -> Reply:
        if request.get("tool_choice") == "none":
            return Reply(raw_stream=slow, chunk_delay=0.3)
        return Reply(tool_calls=[("read_file", "{}")])

    _upstream, client, _ = start_guarded(respond, policy("    answer_timeout_s: 0.5\n"))
    texts, finishes, response = final_choices(client, "request", stream=True)
    assert set(texts) == {0, 1} and finishes == {0: "stop", 1: "stop"}
    assert all(text.startswith(TEMPLATE) for text in texts.values())
    assert response.text.count("data: [DONE]") == 1 and "terminate=reply" in response.text
