"""Text the gateway did not write (lone surrogates, huge values, people's ids) cannot switch the
guard off, lose an audit event, break a stream, or grow /metrics: each through a child gateway
writing JSON logs, as operators run it."""

from __future__ import annotations

import json

import httpx
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.responses_upstream import ResponsesUpstream
from support.responses_upstream import stubborn as responses_stubborn
from support.servers import serve
from support.upstream import Reply
from support.waiting import wait_for

SURROGATE = "\ud800"  # half an emoji, as a truncating client sends it: valid JSON, not UTF-8
CALL_ARGS = '{"path": "a.txt"}'


def chat_loop(calls: int, tool: str = "read_file") -> list[dict]:
    messages = [{"role": "user", "content": "read a.txt"}]
    for i in range(calls):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{i}", "type": "function", "function": {"name": tool, "arguments": CALL_ARGS}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "same text"})
    return messages


def responses_loop(calls: int) -> list[dict]:
    items: list[dict] = [{"role": "user", "content": "read a.txt"}]
    for i in range(calls):
        items.append({"type": "function_call", "call_id": f"call_{i}", "name": "read_file", "arguments": CALL_ARGS})
        items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": "same text"})
    return items


def post_raw(url: str, path: str, body: dict, **headers: str) -> httpx.Response:
    """``json.dumps`` writes a lone surrogate as the ``\\ud800`` escape a real client sends."""
    raw = json.dumps(body).encode("ascii")
    return httpx.post(
        url + path,
        content=raw,
        timeout=30,
        headers={"content-type": "application/json", "authorization": "Bearer sk-a", **headers},
    )


def no_render_failures(child) -> None:
    text = child.stderr_path.read_text("utf-8", "replace")
    assert "audit.sink_failed" not in text and "fail_open" not in text, text[-2000:]


def test_a_surrogate_in_previous_response_id_leaves_the_guard_on(tmp_path, child_gateway):
    upstream = ResponsesUpstream(responses_stubborn())
    with serve(upstream.app) as upstream_url:
        child = child_gateway(upstream_url, ladder_policy())
        body = {
            "model": "m",
            "previous_response_id": "resp_x" + SURROGATE,
            "input": responses_loop(6),
            "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
        }
        for _ in range(3):  # every time, not only the first
            response = post_raw(child.url, "/v1/responses", body)
            assert response.headers["x-loopguard-action"] == "terminate"
        assert upstream.requests == []  # the loop never went upstream
        (unknown, *_) = child.events("chain_unknown")
        assert unknown["previous_response_id"] == "resp_x\\ud800"  # escaped, not dropped
        no_render_failures(child)


def _chat_case(field: str) -> tuple[dict, dict]:
    """(body fields, headers) naming the session or the tool with a lone surrogate."""
    if field == "user":
        return {"user": "alice" + SURROGATE}, {}
    if field == "metadata.session_id":
        return {"metadata": {"session_id": "run" + SURROGATE}}, {}
    return {}, {"tool": "read" + SURROGATE}


def test_surrogates_in_session_fields_and_tool_names_lose_no_audit_event(tmp_path, child_gateway):
    upstream = RespondingUpstream(lambda request: Reply(content="done"))
    with serve(upstream.app) as upstream_url:
        child = child_gateway(upstream_url, ladder_policy())
        for n, field in enumerate(("user", "metadata.session_id", "tool")):
            extra, options = _chat_case(field)
            body = {"model": "m", "messages": chat_loop(4, options.get("tool", "read_file")), **extra}
            response = post_raw(child.url, "/v1/chat/completions", body)
            assert response.status_code == 200 and response.headers["x-loopguard-action"] == "reject"
            # the intervention and, shortly after (estimated off the request path), its savings
            assert wait_for(lambda: len(child.events("loop_savings")) == n + 1, timeout=20), field
        logged = child.events("loop_intervention")
        audited = [e for e in child.audit() if e["event"] == "loop_intervention"]
        assert len(logged) == len(audited) == 3
        assert logged[2]["tool"] == audited[2]["tool"] == "read\\ud800"
        no_render_failures(child)


def test_body_session_ids_are_hashed_before_logged_or_audited(tmp_path, child_gateway):
    """Claude Code sends JSON naming its device and account as ``metadata.user_id``."""
    user_id = json.dumps({"device_id": "dev-9f8e7d6c", "account_uuid": "acct-1", "session_id": "s-1"})
    upstream = RespondingUpstream(lambda request: Reply(content="done"))
    with serve(upstream.app) as upstream_url:
        child = child_gateway(upstream_url, ladder_policy())
        for extra in ({"user": user_id}, {"metadata": {"session_id": user_id}}):
            response = post_raw(child.url, "/v1/chat/completions", {"model": "m", "messages": chat_loop(4), **extra})
            assert response.headers["x-loopguard-action"] == "reject"
        assert wait_for(lambda: len(child.events("loop_savings")) == 2, timeout=20)
    sessions = [e["session"] for e in child.events("loop_intervention")] + [e["session"] for e in child.audit()]
    assert len(sessions) == 6 and all(":u:" in s or ":m:" in s for s in sessions)
    everything = child.stderr_path.read_text() + child.audit_path.read_text()
    assert "dev-9f8e7d6c" not in everything and "device_id" not in everything


def _tool_call_chunk(arguments: str) -> bytes:
    return (
        b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
        b'"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":'
        b'{"name":"read_file","arguments":' + arguments.encode() + b'}}]},"finish_reason":null}]}\n\n'
    )


FINISH = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"tool_calls"}]}\n\n'
)


def test_a_surrogate_inside_streamed_object_arguments_keeps_the_stream(upstream, child_gateway):
    child = child_gateway(upstream.url)
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    for arguments in ('{"path": "a\\ud800"}', '"{\\"path\\": \\"a\\ud800\\"}"'):  # an object, then text
        upstream.queue(Reply(raw_stream=[_tool_call_chunk(arguments), FINISH, b"data: [DONE]\n\n"]))
        with httpx.stream(
            "POST",
            child.url + "/v1/chat/completions",
            timeout=30,
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}], "tools": tools},
        ) as response:
            body = response.read()  # a cut stream raises here
        assert body.endswith(b"data: [DONE]\n\n") and b"\\ud800" in body
    assert "Exception in ASGI application" not in child.stderr_path.read_text()


def test_client_chosen_model_names_cannot_grow_metrics(tmp_path, child_gateway):
    """Runs stopped in terminate mode ``answer`` count the answer's tokens by model."""
    upstream = RespondingUpstream(lambda request: Reply(content="Final answer."))
    policy = ladder_policy("interventions:\n  terminate:\n    mode: answer\n")
    with serve(upstream.app) as upstream_url:
        child = child_gateway(upstream_url, policy)
        with httpx.Client(base_url=child.url, timeout=30) as client:
            for i in range(130):
                model = f"m{i:04d}-" + "x" * 2000
                response = client.post("/v1/chat/completions", json={"model": model, "messages": chat_loop(5)})
                assert response.headers["x-loopguard-terminate"] == "answer"
            metrics = client.get("/metrics").text
    series = [line for line in metrics.splitlines() if line.startswith("loopguard_terminate_answer_tokens_total{")]
    assert len(series) <= 101 and any('model="other"' in line for line in series)
    assert max(len(line) for line in metrics.splitlines()) < 1000
