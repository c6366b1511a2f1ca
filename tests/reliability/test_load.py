"""Many requests at once: one session hit in parallel, slow senders, a history too long to judge."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
from support.guarded import guarded
from support.looping import stubborn
from support.rawhttp import connect, read_response, request_bytes
from support.seen import observations

CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_{i}", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
    ],
}


def _history(calls: int) -> list[dict]:
    messages = [{"role": "user", "content": "read a.txt"}]
    for i in range(calls):
        call = json.loads(json.dumps(CALL).replace("{i}", str(i)))
        messages += [call, {"role": "tool", "tool_call_id": f"call_{i}", "content": "same text"}]
    return messages


def test_parallel_requests_on_one_session_store_one_copy_of_a_veto(tmp_path):
    body = {"model": "m", "messages": _history(3)}  # the model's 4th identical call is vetoed
    headers = {"x-loopguard-session": "busy", "authorization": "Bearer sk-a"}
    with guarded(stubborn(), tmp_path) as g:
        with ThreadPoolExecutor(20) as pool:
            statuses = list(
                pool.map(
                    lambda _: (
                        httpx.post(g.url + "/v1/chat/completions", json=body, headers=headers, timeout=30).status_code
                    ),
                    range(100),
                )
            )
        assert set(statuses) == {200}
        first = len(g.upstream.requests)
        httpx.post(g.url + "/v1/chat/completions", json={**body, "messages": _history(3)}, headers=headers)
        assert len(observations(g.upstream.requests[first]["json"])) == 1


def test_slow_senders_are_cut_with_408_while_others_are_served(make_gateway):
    url = make_gateway(limits={"body_timeout_s": 1})
    request = request_bytes(
        "POST",
        "/v1/chat/completions",
        [("Content-Type", "application/json")],
        json.dumps({"model": "m", "messages": []}).encode(),
    )
    slow = [connect(url) for _ in range(50)]
    for sock in slow:
        sock.sendall(request[:-3])  # the body never completes
    assert httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": []}).status_code == 200
    statuses = [read_response(sock).status for sock in slow]
    for sock in slow:
        sock.close()
    assert statuses == [408] * 50


def test_a_history_longer_than_max_messages_is_refused(make_gateway, upstream):
    url = make_gateway(limits={"max_messages": 1000})
    messages = [{"role": "user", "content": str(i)} for i in range(100_000)]
    response = httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": messages}, timeout=30)
    assert response.status_code == 400 and response.json()["error"]["code"] == "too_many_messages"
    assert upstream.requests == []
