"""End to end on the Anthropic Messages API: the anthropic SDK's agent loop, a real gateway and a
real scripted Anthropic-speaking upstream, all on loopback."""

from __future__ import annotations

import anthropic
import httpx
import orjson
import pytest
from support.anthropic_upstream import Said, healthy, stubborn
from support.claude_agent import TOOLS, ClaudeAgent
from support.claude_gateway import start_claude
from support.policies import ladder_policy
from support.servers import serve

from gateway.config import Config
from gateway.detectors import REGISTRY
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app

MARK = "[loopguard]"


def system_notes(body: dict) -> list[str]:
    system = body.get("system")
    blocks = system if isinstance(system, list) else [{"type": "text", "text": system or ""}]
    return [b["text"] for b in blocks if "[LoopGuard]" in b.get("text", "")]


def veto_results(body: dict) -> list[dict]:
    return [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result" and str(b.get("content", "")).startswith(MARK)
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_claude_agent_is_warned_refused_then_ended(start_claude, stream):
    upstream, client, _ = start_claude(stubborn())
    agent = ClaudeAgent(client, stream=stream)

    answer = agent.run("summarize a.txt")

    # Three executions; the 4th call was refused (never executed), the insisting 5th ended the run.
    assert agent.executions["read_file"] == 3 <= 8
    assert agent.stop_reasons[-1] == "end_turn"
    assert answer and "stopped" in answer and "read_file" in answer
    warned, reasked = upstream.requests[3]["json"], upstream.requests[4]["json"]
    assert system_notes(warned) and "read_file" in system_notes(warned)[0]
    shown = veto_results(reasked)
    assert shown and shown[0]["is_error"] is True and "rejected" in shown[0]["content"]
    refused_turn = reasked["messages"][-2]
    assert refused_turn["role"] == "assistant" and refused_turn["content"][0]["type"] == "tool_use"
    assert shown[0]["tool_use_id"] == refused_turn["content"][0]["id"]
    # Then one request for a final answer with tools closed; this model still calls its tool
    # there, so the template ends the run. Nothing more after that.
    assert len(upstream.requests) == 6 and upstream.requests[5]["json"]["tool_choice"] == {"type": "none"}
    # The agent's own history never holds the gateway's notes.
    assert MARK not in orjson.dumps(agent.messages).decode()
    # A stream's headers go out before the model's call is judged: they carry the request's warn.
    assert agent.actions[-1] == ("warn" if stream else "terminate")


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_call_is_replaced_by_what_the_model_does_next(start_claude, stream):
    def model(body):
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any("'.'" in str(b.get("content")) for b in last):
            return Said(text="Done: a.txt and b.txt.")
        if veto_results(body):
            return Said(text="Listing instead.", calls=[("list_dir", {"path": "."})])
        return Said(calls=[("read_file", {"path": "a.txt"})])

    upstream, client, _ = start_claude(model)
    agent = ClaudeAgent(client, stream=stream)
    assert agent.run("look around") == "Done: a.txt and b.txt."
    assert agent.executions == {"read_file": 3, "list_dir": 1}
    # Later requests still show the model its refused call, just before what it did instead.
    last = upstream.requests[-1]["json"]["messages"]
    at = next(i for i, m in enumerate(last) if veto_results({"messages": [m]}))
    assert last[at - 1]["content"][0]["name"] == "read_file"
    assert [b["name"] for b in last[at + 1]["content"] if b["type"] == "tool_use"] == ["list_dir"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_healthy_agent_is_untouched_byte_for_byte(start_claude, stream):
    upstream, _, gateway = start_claude(healthy(files=3))
    sent, received = [], []

    def on_response(response) -> None:
        response.read()  # kept on the response: the SDK reads it from there
        received.append(response.content)

    # The SDK's own HTTP client, with hooks that see the exact bytes on the wire.
    http = anthropic.DefaultHttpxClient(
        event_hooks={"request": [lambda r: sent.append(r.content)], "response": [on_response]}
    )
    client = anthropic.Anthropic(base_url=gateway, api_key="sk-ant-client", max_retries=0, http_client=http)
    agent = ClaudeAgent(client, stream=stream)
    assert agent.run("check the files") == "All files read: nothing to fix."
    assert agent.executions["read_file"] == 3 and set(agent.actions) == {"pass"}
    assert [r["raw"] for r in upstream.requests] == sent  # the client's bytes reach the model
    assert upstream.sent == received  # and the model's bytes reach the client


HI = {"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    "headers",
    [
        {
            "x-api-key": "sk-ant-client",
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14",
        },
        {"authorization": "Bearer sk-ant-oauth", "anthropic-version": "2023-06-01"},  # token-based clients
    ],
)
def test_credentials_and_anthropic_headers_are_forwarded_untouched(start_claude, headers):
    upstream, _client, gateway = start_claude(healthy(files=0))
    assert httpx.post(gateway + "/v1/messages", json=HI, headers=headers).status_code == 200
    seen = upstream.last["headers"]
    assert {k: seen.get(k) for k in headers} == headers
    assert upstream.last["path"] == "/v1/messages"


def test_a_server_side_key_replaces_the_clients_credentials(start_claude):
    upstream, _client, gateway = start_claude(
        healthy(files=0), anthropic_api_key="sk-ant-server", api_key="sk-openai-server"
    )
    httpx.post(
        gateway + "/v1/messages",
        json=HI,
        headers={"x-api-key": "sk-ant-client", "authorization": "Bearer client-token"},
    )
    seen = upstream.last["headers"]
    assert seen["x-api-key"] == "sk-ant-server"
    assert "authorization" not in seen  # neither the client's token nor the OpenAI key


def test_messages_without_v1_and_count_tokens_reach_the_anthropic_upstream(start_claude):
    upstream, client, gateway = start_claude(healthy(files=0))
    plain = httpx.post(gateway + "/messages", json=HI, headers={"x-api-key": "k"})
    assert plain.status_code == 200 and upstream.last["path"] == "/v1/messages"
    counted = client.messages.count_tokens(
        model="claude-sonnet-4-6", messages=[{"role": "user", "content": "hi"}], tools=TOOLS
    )
    assert counted.input_tokens == 7 and upstream.last["path"] == "/v1/messages/count_tokens"


def test_errors_the_gateway_writes_are_in_anthropics_shape(start_claude):
    upstream, _client, gateway = start_claude(healthy(files=0))
    reply = httpx.post(gateway + "/v1/messages", content=b"{not json", headers={"x-api-key": "k"})
    assert reply.status_code == 400
    assert reply.json()["type"] == "error" and reply.json()["error"]["type"] == "invalid_request_error"
    assert upstream.requests == []


def test_upstream_errors_reach_the_sdk_as_sent(start_claude):
    _upstream, client, _ = start_claude(lambda body: Said(status=529, error_type="overloaded_error"))
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 529
    assert raised.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "scripted"}}


def test_an_unreachable_anthropic_upstream_is_an_anthropic_error(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    config = Config.model_validate({"upstream": {"anthropic_base_url": "http://127.0.0.1:9"}})
    with serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS) as gateway:
        client = anthropic.Anthropic(base_url=gateway, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as raised:
            client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 502 and raised.value.body["error"]["type"] == "api_error"


@pytest.mark.parametrize("stream", [False, True])
def test_with_thinking_on_only_the_reask_goes_without_it(start_claude, stream):
    upstream, client, _ = start_claude(stubborn())
    thinking = {"type": "enabled", "budget_tokens": 1024}
    agent = ClaudeAgent(
        client,
        stream=stream,
        options={"thinking": thinking, "max_tokens": 2048, "system": [{"type": "text", "text": "You read files."}]},
    )
    agent.run("summarize a.txt")
    sent = [r["json"] for r in upstream.requests]
    assert [b.get("thinking") for b in sent] == [thinking] * 4 + [{"type": "disabled"}] * 2
    # The warning went to the end of the system prompt, after the client's own block.
    assert sent[3]["system"][0] == {"type": "text", "text": "You read files."}
    assert sent[3]["system"][1]["text"].startswith("[LoopGuard]")


def read_a(ident: str) -> dict:
    return {"type": "tool_use", "id": ident, "name": "read_file", "input": {"path": "a.txt"}}


def answered(ident: str, text: str = "same") -> dict:
    return {"type": "tool_result", "tool_use_id": ident, "content": text}


@pytest.mark.parametrize(
    "order",
    [
        ("read", "list"),
        ("list", "read"),
        ("read", "list", "tests"),
        ("list", "read", "tests"),
        ("list", "tests", "read"),
    ],
)
def test_the_refused_result_is_the_looping_calls_among_parallel_results(start_claude, order):
    """Four rounds of the same parallel calls and results; the round's last call, the read, is
    at reject level. The last round's results come in ``order`` (an agent reports them as its
    calls finish): only the read's result becomes the refusal, the others stay as sent."""
    upstream, client, _ = start_claude(lambda body: Said(text="ok"))
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for n in range(1, 5):
        # The read is the round's last call (the one judged); results come in call order,
        # except in the last round.
        called_order = [name for name in order if name != "read"] + ["read"]
        uses = [called(name, f"toolu_{name}{n}") for name in called_order]
        results = [
            {"type": "tool_result", "tool_use_id": f"toolu_{name}{n}", "content": f"output of {name}"}
            for name in (order if n == 4 else called_order)
        ]
        messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]

    raw = client.messages.with_raw_response.create(
        model="claude-sonnet-4-6", max_tokens=64, tools=TOOLS, messages=messages
    )

    assert raw.headers["x-loopguard-action"] == "reject"
    sent = upstream.last["json"]["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in sent] == [b["tool_use_id"] for b in results]  # same blocks, same order
    for before, after in zip(results, sent, strict=True):
        if before["tool_use_id"] == "toolu_read4":
            assert after["is_error"] is True and after["content"].lower().startswith(MARK)
        else:
            assert after == before


def called(name: str, ident: str) -> dict:
    tool, args = {
        "read": ("read_file", {"path": "a.txt"}),
        "list": ("list_dir", {"path": "."}),
        "tests": ("run_tests", {}),
    }[name]
    return {"type": "tool_use", "id": ident, "name": tool, "input": args}


ONLY_COMPACTION = "version: 1\nname: only-compaction\ndetectors:\n" + "".join(
    f"  {name}: false\n" for name in REGISTRY if name != "post_compaction"
)


@pytest.mark.parametrize(
    ("metadata", "sessions", "followed"),
    [
        ({"user_id": "user_5e1f_account_9c2d_session_0b7a"}, {}, True),
        ({"user_id": "user_5e1f_account_9c2d_session_0b7a"}, {"body_user": False}, False),  # switched off
        (None, {}, False),  # only the fingerprint, which the summary changed
    ],
)
def test_metadata_user_id_names_the_session_a_full_summary_keeps(start_claude, metadata, sessions, followed):
    """A Claude-Code-style agent replaces its whole history with a summary and keeps looping.
    Its ``metadata.user_id`` is its session (as OpenAI's ``user`` is), so the post-compaction
    guard follows it across the summary; without it nothing ties the two histories together."""
    _, client, _ = start_claude(stubborn(), ONLY_COMPACTION, sessions=sessions)
    agent = ClaudeAgent(client, results={"read_file": "same"}, options={"metadata": metadata} if metadata else {})
    assert agent.run("summarize a.txt", max_steps=4) is None  # looping, unbothered so far
    agent.messages = []  # the summary replaces everything
    answer = agent.run("Summary of the work so far: a.txt was read several times. Continue.", max_steps=6)
    if followed:  # 4 calls before the summary, 3 identical ones after it, then the run ends
        assert answer and "compaction_loop_persisted" in answer and agent.executions["read_file"] == 7
    else:
        assert answer is None and agent.executions["read_file"] == 10
