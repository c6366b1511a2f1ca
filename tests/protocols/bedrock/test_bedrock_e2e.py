"""End to end on Bedrock's InvokeModel: the anthropic SDK's ``AnthropicBedrock`` (a plain tool loop
and the SDK's tool runner, streamed and not), a real gateway signing with its own AWS
credentials, and a scripted Bedrock runtime that verifies every SigV4 signature as AWS does."""

from __future__ import annotations

import pytest
from support.bedrock_agents import FINAL, healthy, ids_out, runner, stubborn, tool_loop, tools_closed
from support.bedrock_gateway import bedrock_client, start_bedrock
from support.bedrock_upstream import MODEL, PROFILE_ARN

__all__ = ["start_bedrock"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("agent", [tool_loop, runner])
def test_a_looping_agent_is_ended_with_the_models_answer(start_bedrock, agent, stream):
    upstream, url = start_bedrock(stubborn)

    answer, executed = agent(bedrock_client(url), stream)

    assert answer == FINAL  # the model's own answer, written with tools closed
    assert executed <= 8
    assert upstream.refused == []  # every request the gateway sent was signed right
    assert b"[LoopGuard]" in upstream.requests[3]["raw"]  # warned, then the body re-signed
    assert tools_closed(upstream.requests[-1]["json"])
    action = "invoke-with-response-stream" if stream else "invoke"
    assert all(r["raw_path"] == f"/model/{MODEL}/{action}" for r in upstream.requests)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", [MODEL, PROFILE_ARN], ids=["model-id", "profile-arn"])
def test_a_healthy_agent_gets_what_it_gets_without_the_gateway(start_bedrock, stream, model):
    upstream, url = start_bedrock(healthy)
    direct = tool_loop(bedrock_client(upstream.url), stream, model)
    sent_directly = [ids_out(r["raw"]) for r in upstream.requests]
    upstream.requests.clear()

    through = tool_loop(bedrock_client(url), stream, model)

    assert through == direct == ("All files read: nothing to fix.", 3)
    assert [ids_out(r["raw"]) for r in upstream.requests] == sent_directly  # the client's bytes
    assert upstream.refused == []  # re-signed by the gateway, valid
    assert {r["raw_path"].rpartition("/")[0] for r in upstream.requests} == {"/model/" + model.replace("/", "%2F")}
