"""Fail-open: whatever breaks inside the guard, the request reaches the model untouched."""

import httpx
import orjson
import pytest
from support.agent import Agent
from support.looping import stubborn
from support.seen import anchors
from support.upstream import Reply

import gateway.pipeline.request as request_stage
from gateway.detectors import REGISTRY
from gateway.detectors.base import Detector, DetectorSettings


def boom(trace, settings):
    raise RuntimeError("detector bug")


def looping_history() -> list[dict]:
    messages = [{"role": "user", "content": "go"}]
    for i in range(3):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "same"})
    return messages


def post(client, body: bytes) -> httpx.Response:
    return httpx.post(
        client.gateway_url + "/v1/chat/completions",
        content=body,
        headers={"content-type": "application/json", "authorization": "Bearer sk-test"},
        timeout=30,  # a host loaded by the parallel suite, not the gateway, can take seconds
    )


def test_a_raising_detector_is_skipped_and_the_others_still_act(start_guarded):
    registry = {"boom": Detector("boom", boom, DetectorSettings), **REGISTRY}
    upstream, client, _ = start_guarded(stubborn(), registry=registry)
    agent = Agent(client, tools={"read_file": lambda a: "same"})
    agent.run("go")
    assert agent.executions["read_file"] == 3  # no_progress still warned, vetoed and stopped it
    assert anchors(upstream.requests[3]["json"])
    metrics = httpx.get(client.gateway_url + "/metrics").text
    assert "loopguard_fail_open_errors_total 0.0" not in metrics and "loopguard_fail_open_errors_total" in metrics


@pytest.mark.parametrize("broken", ["plan_request", "for_plan"])
def test_a_guard_crash_forwards_the_exact_request(start_guarded, monkeypatch, broken):
    upstream, client, _ = start_guarded(lambda r: Reply(content="fine"))

    def crash(*args, **kwargs):
        raise RuntimeError("guard bug")

    monkeypatch.setattr(request_stage, broken, crash)
    body = orjson.dumps({"model": "m", "messages": looping_history()})  # would be warned
    response = post(client, body)
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "fine"
    assert upstream.last["raw"] == body  # not rewritten: no anchor, byte for byte
    assert response.headers["x-loopguard-action"] == "pass"


def test_valid_json_that_orjson_refuses_is_forwarded_not_refused(start_guarded):
    upstream, client, _ = start_guarded(lambda r: Reply(content="fine"))
    body = b'{"model": "m", "messages": [{"role": "user", "content": "file name: \\udcff.txt"}]}'
    response = post(client, body)
    assert response.status_code == 200
    assert upstream.last["raw"] == body
