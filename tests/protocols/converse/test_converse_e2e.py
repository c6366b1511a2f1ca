"""End to end on Bedrock's Converse API: boto3's ``bedrock-runtime`` agents (``converse`` and
``converse_stream``), a real gateway and a real scripted Bedrock runtime, all on loopback."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from support.converse_gateway import run_agent, start_converse
from support.converse_upstream import CROSS_REGION, MODEL, PROFILE, healthy, stubborn

FINAL = "I could not finish: the file never changed."


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_agent_is_warned_refused_then_ended_with_the_models_answer(start_converse, stream):
    upstream, client, _ = start_converse(stubborn(final=FINAL))

    answer, executions = run_agent(client, stream)

    assert answer == FINAL and executions == 3 <= 8
    warned, reasked, closed = (upstream.requests[i]["json"] for i in (3, 4, 5))
    assert "[LoopGuard]" in warned["system"][-1]["text"]  # the default placement
    refused_call, observation = reasked["messages"][-2:]
    assert refused_call["content"][0]["toolUse"]["name"] == "read_file"
    result = observation["content"][0]["toolResult"]
    assert result["status"] == "error" and "rejected" in result["content"][0]["text"]
    assert "toolConfig" not in closed and len(upstream.requests) == 6


@pytest.mark.parametrize("stream", [False, True])
def test_a_healthy_agent_is_relayed_untouched(start_converse, stream):
    upstream, client, _ = start_converse(healthy(steps=2))

    answer, executions = run_agent(client, stream)

    assert answer == "All files summarized: a short, complete answer." and executions == 2
    assert len(upstream.requests) == 3 and all(b"LoopGuard" not in r["raw"] for r in upstream.requests)
    assert all(r["path"] == f"/model/{MODEL}/converse{'-stream' if stream else ''}" for r in upstream.requests)


@pytest.mark.parametrize("stream", [False, True])
def test_a_cross_region_profile_id_is_the_model_and_reaches_the_cloud_signed(start_converse, stream):
    upstream, client, _ = start_converse(healthy(steps=0))
    assert run_agent(client, stream, model=CROSS_REGION)[0].startswith("All files")
    assert upstream.last["raw_path"].split("/")[2] in (CROSS_REGION, quote(CROSS_REGION, safe=""))


def test_a_model_arn_with_a_slash_is_refused_in_bedrocks_shape(start_converse):
    """An ARN's "/" comes percent-encoded, which the gateway's path gate refuses for every
    route (an encoded slash would route differently upstream): a clear ValidationException."""
    upstream, client, _ = start_converse(healthy(steps=0))
    with pytest.raises(client.exceptions.ValidationException, match="encoded"):
        run_agent(client, False, model=PROFILE)
    assert upstream.requests == []
