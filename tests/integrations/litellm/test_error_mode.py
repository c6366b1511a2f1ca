"""``terminate.mode: error`` and ``mode: [during_call, post_call]``: the run ends on LiteLLM's
guardrail error with the policy's status, and the history is judged while the model runs."""

from __future__ import annotations

import openai
import pytest
from support.agent import Agent

from .conftest import guarded_proxy, sdk
from .test_guardrail import from_loopguard, sent_for

pytestmark = pytest.mark.litellm_proxy


@pytest.fixture(scope="module")
def client(upstream, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("litellm-error")
    extra = "interventions:\n  terminate: {mode: error}\n"
    with guarded_proxy(upstream, workdir, ["during_call", "post_call"], extra) as running:
        yield sdk(running)


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_the_loop_ends_on_a_422_guardrail_error(client, upstream, stream):
    prompt = f"summarise c.txt ({'stream' if stream else 'unary'})"
    agent = Agent(client, tools={"read_file": lambda a: "the same text"}, stream=stream)
    with pytest.raises(openai.APIError) as raised:
        agent.run(prompt)
    if not stream:  # a stream's status went out with its first chunk
        assert isinstance(raised.value, openai.UnprocessableEntityError)
    assert "stopped because the agent was stuck in a loop" in str(raised.value)
    assert agent.executions["read_file"] == 3  # the vetoed fourth call never ran
    sent = sent_for(upstream, prompt)
    # during_call cannot change a request already sent: no anchor; the veto still re-asked
    assert not any(m["role"] == "system" for r in sent for m in r["messages"])
    assert len(sent) == 5 and from_loopguard(sent[4]) and sent[4]["messages"][-1]["role"] == "tool"
