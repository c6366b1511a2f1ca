"""End to end: an agentic-RAG loop through the real gateway with the shipped rag example
policy. Three demo queries (confidences 0.3, 0.45, 0.42) reach max_iterations: the model is
told to answer from the best iteration (its query and confidence), and a further retrieval call
is vetoed before the agent runs it; a model that insists is ended."""

import json

import pytest
from support.agent import Agent, declare
from support.policies import example_policy
from support.seen import anchors, observations
from support.upstream import Reply

TOOL = "search_knowledge_base"
CONFIDENCE = {"公司报销制度": 0.3, "报销流程规定": 0.45, "报销审批标准": 0.42, "报销报表模板": 0.5}
QUERIES = list(CONFIDENCE)


def search(args: dict) -> str:
    return json.dumps({"confidence": CONFIDENCE[args["query"]], "hits": ["..."]}, ensure_ascii=False)


def next_search(request: dict) -> Reply:
    done = sum(1 for m in request["messages"] if m.get("role") == "assistant" and m.get("tool_calls"))
    query = QUERIES[min(done, len(QUERIES) - 1)]
    return Reply(tool_calls=[(TOOL, json.dumps({"query": query}, ensure_ascii=False))])


def researcher(request: dict) -> Reply:
    """Keeps searching through warnings; answers once a retrieval call is refused."""
    if observations(request):
        return Reply(content="根据报销流程规定：差旅费按实际发生报销。")
    return next_search(request)


@pytest.mark.parametrize("stream", [False, True])
def test_retrieval_stop_warns_then_rejects_a_further_call(start_guarded, stream):
    upstream, client, _ = start_guarded(researcher, example_policy("rag"))
    agent = Agent(client, tools={TOOL: search}, specs=declare(TOOL), stream=stream)

    answer = agent.run("差旅费怎么报销？")

    assert answer == "根据报销流程规定：差旅费按实际发生报销。"
    assert agent.executions[TOOL] == 3  # the 4th search was vetoed, never run
    assert not any(anchors(r["json"]) for r in upstream.requests[:3])  # iterations 1-2: continue
    warned = anchors(upstream.requests[3]["json"])  # after the 3rd: stop_max_iter
    assert len(warned) == 1 and "Stop retrieving" in warned[0]
    assert '"报销流程规定"' in warned[0] and "confidence 0.45" in warned[0]  # the best iteration
    rejected = observations(upstream.requests[4]["json"])
    assert len(rejected) == 1 and "rejected and not executed" in rejected[0] and "报销流程规定" in rejected[0]
    assert len(upstream.requests) == 5
    if not stream:
        assert agent.actions == ["pass", "pass", "pass", "reject"]


def test_a_model_that_keeps_retrieving_is_ended(start_guarded):
    upstream, client, _ = start_guarded(next_search, example_policy("rag"))
    agent = Agent(client, tools={TOOL: search}, specs=declare(TOOL))

    answer = agent.run("差旅费怎么报销？")

    assert agent.executions[TOOL] == 3
    assert answer.startswith("[LoopGuard] This run was stopped: the agent kept retrieving")
    assert '"报销流程规定" (confidence 0.45)' in answer
    # the 4th proposal, its 2 re-asks (max_reasks), then the closed-tools request for a final
    # answer, where this model still calls its tool: the template ends the run
    assert len(upstream.requests) == 4 + 2 + 1
    assert agent.actions[-1] == "terminate"


def test_a_sufficient_first_result_stops_at_once(start_guarded):
    upstream, client, _ = start_guarded(researcher, example_policy("rag"))
    agent = Agent(client, tools={TOOL: lambda a: '{"confidence": 0.9}'}, specs=declare(TOOL))
    agent.run("差旅费怎么报销？")
    warned = anchors(upstream.requests[1]["json"])
    assert warned and "the results are already sufficient" in warned[0] and "confidence 0.9" in warned[0]
    assert agent.executions[TOOL] == 1
