"""End to end with the OpenAI Agents SDK on its default model (the Responses API): a looping
agent run ends gracefully with a final text, never MaxTurnsExceeded; a healthy one is untouched."""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI
from support.responses_upstream import finishing, guarded, stubborn


@pytest.fixture
def start(tmp_path):
    with ExitStack() as stack:
        yield lambda responder: stack.enter_context(guarded(responder, tmp_path))


def run_config(url: str) -> RunConfig:
    # The SDK's default provider and model (Responses), pointed at the gateway; no tracing export.
    sdk = AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
    return RunConfig(model_provider=OpenAIProvider(openai_client=sdk, use_responses=True), tracing_disabled=True)


def reader(executions: Counter, result: str = "contents of a.txt"):
    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        executions[path] += 1
        return result

    return read_file


@pytest.mark.parametrize("streamed", [False, True])
async def test_looping_agent_run_ends_with_a_final_text(start, streamed):
    upstream, url = start(stubborn())
    executions: Counter = Counter()
    agent = Agent(name="reader", instructions="Use the tools.", tools=[reader(executions)], model="gpt-4.1")

    if streamed:
        result = Runner.run_streamed(agent, "Summarize a.txt", max_turns=20, run_config=run_config(url))
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "Summarize a.txt", max_turns=20, run_config=run_config(url))

    assert sum(executions.values()) <= 8 and executions["a.txt"] == 3
    assert result.final_output == "I will stop calling tools now."  # written with tools closed
    assert all(r["path"] == "/v1/responses" for r in upstream.requests)
    # Warned before the 4th step, then the 4th call withheld and re-asked with our observation.
    assert b"[LoopGuard]" in upstream.requests[3]["raw"] and b"[LoopGuard]" not in upstream.requests[2]["raw"]
    assert b'"output":"[loopguard]' in upstream.requests[4]["raw"].replace(b'": "', b'":"')


@pytest.mark.parametrize("streamed", [False, True])
async def test_healthy_agent_run_is_untouched(start, streamed):
    upstream, url = start(finishing(2))
    executions: Counter = Counter()
    agent = Agent(name="reader", instructions="Use the tools.", tools=[reader(executions, "data")], model="gpt-4.1")
    if streamed:
        result = Runner.run_streamed(agent, "Read the files", max_turns=20, run_config=run_config(url))
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "Read the files", max_turns=20, run_config=run_config(url))
    assert result.final_output == "All files read: the retry limit is 3."
    assert sum(executions.values()) == 2
    assert not any(b"[loopguard]" in r["raw"] for r in upstream.requests)
