"""The agentic-RAG loop guard: a three-query demo, every decision, duplicate queries in Chinese and
English, reading queries and confidences off tool calls, and the counts the policy acts on."""

from __future__ import annotations

import json

import pytest
from loop_traces import propose, trace_of

from gateway.detectors import REGISTRY
from gateway.detectors.retrieval import (
    Decision,
    Iteration,
    RetrievalSettings,
    confidence_of,
    decide,
    decisions,
    detect,
    is_duplicate,
    trend,
)
from gateway.detectors.text import jaccard, tokens, units
from gateway.policy import Action, load_policy
from gateway.policy.loader import SHIPPED_DIRS
from gateway.trace.model import VETO_MARKER

S = RetrievalSettings(enabled=True, tools=frozenset({"search"}))
DEMO = [("公司报销制度", 0.3), ("报销流程规定", 0.45), ("报销审批标准", 0.42)]  # queries and confidences


def tuned(settings, **changes):
    """Validated (model_copy would skip compiling the regex)."""
    return type(settings).model_validate({**settings.model_dump(), **changes})


def its(*pairs: tuple[str, float | None]) -> list[Iteration]:
    return [Iteration(q, c) for q, c in pairs]


def searches(*pairs: tuple[str, float], tool: str = "search"):
    return [(tool, {"query": q, "top_k": 5}, json.dumps({"confidence": c, "hits": ["..."]})) for q, c in pairs]


# --- the decisions -----------------------------------------------------------------------------


def test_the_demo_stops_at_max_iterations():
    """Per iteration, decision and trend after recording it: iteration 3's max-iteration check
    comes first (the confidence fell, "置信度下降", but the loop stops at 3)."""
    got = [(v.decision, v.trend) for v in decisions(its(*DEMO), S)]
    assert got == [(Decision.CONTINUE, "unknown"), (Decision.CONTINUE, "improving"), (Decision.STOP_MAX_ITER, "stable")]
    assert not any(is_duplicate(q, [p for p, _ in DEMO[:i]]) for i, (q, _) in enumerate(DEMO))


def test_the_demo_with_room_for_a_fourth_iteration_stops_for_no_progress():
    # +0.15 then -0.03: one step up, one down = stable; the last change -0.03 < 0.05.
    verdict = decide(its(*DEMO), tuned(S, max_iterations=4))
    assert (verdict.decision, verdict.trend) == (Decision.STOP_NO_PROGRESS, "stable")


@pytest.mark.parametrize(
    ("pairs", "decision", "flow"),
    [
        ([("a b", 0.3), ("c d", 0.75)], Decision.STOP_SUFFICIENT, "good"),
        ([("a b", 0.7)], Decision.STOP_SUFFICIENT, "good"),  # >= 0.7 on the first iteration
        ([("a b", 0.5), ("c d", 0.4)], Decision.STOP_NO_PROGRESS, "declining"),
        ([("a b", 0.5), ("c d", 0.51)], Decision.STOP_NO_PROGRESS, "stable"),  # within +-0.02
        ([("a b", 0.3), ("c d", 0.45), ("e f", 0.46)], Decision.CONTINUE, "improving"),  # improving wins
        ([("a b", 0.3), ("c d", 0.33)], Decision.CONTINUE, "improving"),
        ([("a b", None), ("c d", None)], Decision.CONTINUE, "unknown"),  # nothing to judge
    ],
)
def test_decisions(pairs, decision, flow):
    verdict = decide(its(*pairs), tuned(S, max_iterations=5))
    assert (verdict.decision, verdict.trend) == (decision, flow)


def test_trend_counts_steps_beyond_the_tolerance():
    assert trend([0.3]) == "unknown"
    assert trend([0.3, 0.35, 0.3, 0.36]) == "improving"
    assert trend([0.5, 0.52, 0.54]) == "stable"  # +0.02 is not beyond 0.02 (no float residue)
    assert decide(its(("a b", 0.3), ("c d", 0.35)), S).decision == Decision.CONTINUE  # +0.05 is enough
    assert trend([0.5, 0.4, 0.45, 0.3]) == "declining"


# --- duplicate queries --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "earlier"),
    [
        ("Expense Policy ", "expense   policy"),  # exact after normalization
        ("公司的报销制度", "公司报销制度。"),  # a particle and punctuation
        ("2024年公司差旅报销制度具体规定？", "2024年 公司差旅报销制度的具体规定"),
        (
            "travel expense reimbursement policy for employees in the Shanghai office 2024",
            "travel expense reimbursement policy for employees in the shanghai office, 2024 (latest)",
        ),
    ],
)
def test_duplicates(query, earlier):
    assert is_duplicate(query, [earlier])
    assert decide(its((earlier, 0.3), (query, 0.5)), S).decision == Decision.STOP_DUPLICATE


@pytest.mark.parametrize(
    ("query", "earlier"),
    [
        ("报销审批标准", "报销流程规定"),
        ("公司报销制度", "报销制度 公司"),  # reordered: jieba's words would say 1.0
        ("expense policy", "travel policy"),
    ],
)
def test_not_duplicates(query, earlier):
    assert not is_duplicate(query, [earlier])


def test_bigrams_compared_with_jieba_words():
    assert tokens("报销流程规定") == {"报销", "销流", "流程", "程规", "规定"}
    assert tokens("The expense policy, v2") == {"the", "expense", "policy", "v2"}
    assert jaccard(tokens("公司报销制度"), tokens("报销制度 公司")) == pytest.approx(0.8)
    assert jaccard(tokens("的"), tokens("了")) == 0.0  # empty word sets never match
    assert units("体检一下") == 4 and units("check my holdings") == 3


# --- reading iterations off the trace -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "result", "value"),
    [
        ({}, '{"confidence": 0.42}', 0.42),
        ({}, '{"confidence": "0.42"}', 0.42),
        ({"confidence_path": "meta.score"}, '{"meta": {"score": 0.8}}', 0.8),
        ({"confidence_path": "hits.0.score"}, '{"hits": [{"score": 0.61}, {"score": 0.2}]}', 0.61),
        ({"confidence_regex": r"confidence=([0-9.]+)"}, "3 documents found (confidence=0.55)", 0.55),
        ({"confidence_regex": r"confidence=([0-9.]+)"}, '{"other": 1} confidence=0.5', 0.5),
        ({}, '{"confidence": true}', None),
        ({}, "no number here", None),
        ({}, "Error: index unavailable", None),
    ],
)
def test_confidence_of(settings, result, value):
    trace = trace_of(("search", {"query": "q"}, result))
    assert confidence_of(trace.latest, tuned(S, **settings)) == value


def test_a_confidence_regex_needs_a_group():
    with pytest.raises(ValueError, match="group"):
        RetrievalSettings(confidence_regex=r"confidence=[0-9.]+")


def test_the_demo_through_the_trace_and_its_counts():
    trace = trace_of(*searches(*DEMO))
    assert detect(trace_of(*searches(*DEMO[:1])), S) is None
    assert detect(trace_of(*searches(*DEMO[:2])), S) is None
    found = detect(trace, S)
    assert found.count == 1 and found.steps == (1, 2, 3) and found.tools == ("search",)
    assert dict(found.details) == {"query": "报销流程规定", "confidence": "0.45", "reason": "stop_max_iter"}
    assert "stop_max_iter" in found.description
    assert detect(propose(trace, "search", {"query": "报销报表"}), S).count == 2  # a further call
    vetoed = trace_of(*searches(*DEMO), ("search", {"query": "报销报表"}, VETO_MARKER + " rejected"))
    assert detect(propose(vetoed, "search", {"query": "报销报表"}), S).count == 3  # insisting


def test_a_proposed_duplicate_is_a_stop_of_its_own():
    trace = trace_of(*searches(("公司报销制度", 0.3)))
    found = detect(propose(trace, "search", {"query": "公司的报销制度"}), S)
    assert found.count == 1 and dict(found.details)["reason"] == "stop_duplicate"
    assert detect(propose(trace, "search", {"query": "报销流程规定"}), S) is None


def test_only_retrieval_tools_and_only_when_the_latest_call_is_one():
    trace = trace_of(*searches(*DEMO), ("read_file", {"path": "a"}, "x"))
    assert detect(trace, S) is None
    assert detect(trace_of(*searches(*DEMO, tool="other")), S) is None
    assert REGISTRY["retrieval"].detect(trace_of(*searches(*DEMO)), RetrievalSettings()) is None  # default: no tools


def test_the_rag_example_warns_at_the_stop_and_rejects_a_further_call():
    policy = load_policy(SHIPPED_DIRS[1] / "examples" / "rag.yaml").resolve()
    trace = trace_of(*searches(*DEMO, tool="search_knowledge_base"), settings=policy.trace_settings)
    judged = policy.judge(trace)
    assert (judged.action, judged.detector) == (Action.WARN, "retrieval")
    warn = policy.render("warn", judged.finding)
    assert "报销流程规定" in warn and "0.45" in warn and "maximum number of retrieval iterations" in warn
    proposed = propose(trace, "search_knowledge_base", {"query": "报销制度原文"}, policy.trace_settings)
    judged = policy.judge(proposed)
    assert (judged.action, judged.detector) == (Action.REJECT, "retrieval")
    assert policy.render("reject", judged.finding).startswith(VETO_MARKER)
