"""End to end on the Responses API: the openai SDK's ``responses`` client and a real agent loop,
the real gateway, a scripted upstream that keeps response chains as the real API does."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest
from support.policies import ladder_policy
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, finishing, start_responses, stubborn
from support.responses_upstream import sdk as client
from support.responses_wire import encode, response, stream_events

MARK = "[loopguard]"  # anchors start with "[LoopGuard]", observations with "[loopguard]"
MODES = [("unary", False), ("stream", False), ("helper", False), ("unary", True), ("stream", True), ("helper", True)]


@pytest.fixture
def start(start_responses):
    return start_responses


def texts(body: dict) -> list[str]:
    """Every text the gateway wrote into a request (anchors and observations)."""
    found = []
    for item in body["input"] if isinstance(body["input"], list) else []:
        blob = orjson.dumps(item).decode()
        if MARK in blob.lower():
            found.append(blob)
    return found


@pytest.mark.parametrize(("mode", "chain"), MODES)
def test_looping_agent_is_warned_then_refused_then_ended_with_a_final_text(start, mode, chain):
    upstream, url = start(stubborn())
    agent = ResponsesAgent(client(url), tools={"read_file": lambda a: "contents of a.txt"}, mode=mode, chain=chain)

    answer = agent.run("Summarize a.txt")

    assert agent.executions["read_file"] == 3  # the 4th call was refused, never executed
    # The end: the model's own answer, written when asked once more with tools closed.
    assert answer == "I will stop calling tools now."
    assert len(upstream.requests) == 6 and upstream.requests[5]["json"]["tool_choice"] == "none"
    warned, reasked = upstream.requests[3]["json"], upstream.requests[4]["json"]
    assert texts(warned) and '"developer"' in texts(warned)[-1]  # the anchor, before the 4th step
    observation = texts(reasked)[-1]
    assert '"function_call_output"' in observation
    if chain:  # the gateway saw the whole chain, though each request carried one output
        assert all(len(r["json"]["input"]) <= 4 for r in upstream.requests[:5])
        assert reasked["previous_response_id"] == warned["previous_response_id"]
    final = agent.responses[-1]
    assert final.status == "completed" and final.output_text == answer
    for events in agent.events:
        numbers = [e.sequence_number for e in events]
        assert numbers == sorted(set(numbers))


@pytest.mark.parametrize(("mode", "chain"), MODES)
def test_healthy_agent_is_untouched(start, mode, chain):
    upstream, url = start(finishing(3))
    agent = ResponsesAgent(client(url), tools={"read_file": lambda a: "data"}, mode=mode, chain=chain)
    assert agent.run("Read the files") == "All files read: the retry limit is 3."
    assert agent.executions["read_file"] == 3
    assert not any(texts(r["json"]) for r in upstream.requests)


BODY = {
    "model": "gpt-4.1",
    "input": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("prefix", ["/v1", ""])
def test_unchanged_exchange_is_relayed_byte_for_byte(start, stream, prefix):
    upstream, url = start(finishing(1))
    sent = orjson.dumps({**BODY, "stream": stream}) + b" "  # odd bytes a re-encode would lose
    reply = httpx.post(
        url + prefix + "/responses",
        content=sent,
        timeout=20,
        headers={"content-type": "application/json", "authorization": "Bearer sk-test"},
    )
    assert upstream.requests[0]["raw"] == sent and upstream.requests[0]["path"] == "/v1/responses"
    response_id = next(iter(upstream.stored))
    output = upstream.stored[response_id][-1:]
    assert reply.status_code == 200 and reply.headers["x-loopguard-action"] == "pass"
    if stream:
        assert reply.content == b"".join(encode(e) for e in stream_events(output, response_id))
    else:
        assert reply.content == orjson.dumps(response(output, response_id))


def test_base_url_without_v1_is_guarded_too(start):
    _upstream, url = start(stubborn())
    agent = ResponsesAgent(
        openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0, timeout=20), tools={"read_file": lambda a: "same"}
    )
    assert agent.run("Summarize a.txt") == "I will stop calling tools now."  # written with tools closed
    assert agent.executions["read_file"] == 3


def test_sub_routes_pass_through(start):
    upstream, url = start(finishing(1))
    sdk = client(url)
    created = sdk.responses.create(model="gpt-4.1", input="hi", tools=BODY["tools"])
    assert sdk.responses.retrieve(created.id).id == created.id
    sdk.responses.delete(created.id)
    assert [r["method"] for r in upstream.requests] == ["POST", "GET", "DELETE"]
    assert upstream.requests[1]["path"] == f"/v1/responses/{created.id}"


def listing_and_rereading(conversation: list, body: dict) -> Answer:
    """Two calls per round: a listing (exempt from the policy) and the same read, forever."""
    return Answer(calls=[("list_dir", '{"path": "."}'), ("read_file", '{"path": "a.txt"}')])


@pytest.mark.parametrize("mode", ["unary", "stream", "helper"])
def test_chain_stays_valid_when_one_call_of_a_round_is_withheld(start, mode):
    upstream, url = start(listing_and_rereading, ladder_policy(exempt_tools="[list_dir]"))
    agent = ResponsesAgent(
        client(url), tools={"read_file": lambda a: "same", "list_dir": lambda a: "x.txt"}, mode=mode, chain=True
    )
    agent.run("Look around", max_steps=7)  # the listing keeps going through: the run goes on
    # From the 4th round on the read is withheld and only the listing reaches the agent; every
    # next request of the chain answers the withheld call for the client (the upstream refuses
    # a chain with an unanswered call), and still goes by reference.
    assert agent.executions == {"read_file": 3, "list_dir": 7}
    seen = {item.call_id for response in agent.responses for item in response.output}
    requests = [r["json"] for r in upstream.requests]
    assert all(r["previous_response_id"] for r in requests[1:])
    owed = [i for r in requests[4:] for i in r["input"] if i["call_id"] not in seen]
    assert len(owed) == 3 and all(i["output"].startswith(MARK) for i in owed)


def test_a_chained_request_the_guard_does_not_change_goes_as_the_clients_bytes(start):
    upstream, url = start(finishing(2))
    first = client(url).responses.create(model="gpt-4.1", input="Read the files", tools=BODY["tools"])
    call = first.output[0]
    sent = orjson.dumps(
        {
            "model": "gpt-4.1",
            "previous_response_id": first.id,
            "tools": BODY["tools"],
            "input": [{"type": "function_call_output", "call_id": call.call_id, "output": "data"}],
        }
    )
    reply = httpx.post(
        url + "/v1/responses",
        content=sent,
        timeout=20,
        headers={"content-type": "application/json", "authorization": "Bearer sk-test"},
    )
    assert reply.status_code == 200 and upstream.requests[-1]["raw"] == sent


def test_a_client_naming_another_clients_response_gets_none_of_its_chain(start):
    """Tenant A's chain holds three identical reads. Tenant B (another key) continues A's latest
    response: the gateway judges B on what B sent, as for an id it does not know, while A
    continuing its own chain is warned."""
    upstream, url = start(stubborn())
    tenant_a = openai.OpenAI(base_url=url + "/v1", api_key="sk-tenant-a", max_retries=0, timeout=20)
    tenant_b = openai.OpenAI(base_url=url + "/v1", api_key="sk-tenant-b", max_retries=0, timeout=20)
    latest = tenant_a.responses.create(model="gpt-4.1", input="Summarize a.txt", tools=BODY["tools"])
    for _ in range(2):
        latest = tenant_a.responses.create(
            model="gpt-4.1",
            previous_response_id=latest.id,
            tools=BODY["tools"],
            input=[
                {"type": "function_call_output", "call_id": latest.output[0].call_id, "output": "contents of a.txt"}
            ],
        )
    following = [{"type": "function_call_output", "call_id": latest.output[0].call_id, "output": "contents of a.txt"}]

    other = tenant_b.responses.with_raw_response.create(
        model="gpt-4.1", previous_response_id=latest.id, tools=BODY["tools"], input=following
    )
    assert other.headers["x-loopguard-action"] == "pass"
    sent = upstream.requests[-1]["json"]
    assert sent["previous_response_id"] == latest.id and sent["input"] == following and not texts(sent)

    before = len(upstream.requests)
    own = tenant_a.responses.with_raw_response.create(
        model="gpt-4.1", previous_response_id=latest.id, tools=BODY["tools"], input=following
    )
    assert own.headers["x-loopguard-action"] != "pass"
    assert texts(upstream.requests[before]["json"])  # A's own request went up with the warning
