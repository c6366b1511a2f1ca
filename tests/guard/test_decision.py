"""The decision core: a judged round and the policy in, what to do out, as data."""

import pytest
from support.policies import ladder_policy

from gateway.guard.decision import ANSWER, ERROR, Judged, Move, at_request, decide, final_text, judge_round, observation
from gateway.policy.loader import load_policy_text
from gateway.protocols.chat.parse import conversation_from_body
from gateway.trace.builder import build_trace
from gateway.trace.model import ToolCall

READ = ToolCall("call_x", "read_file", '{"path": "a.txt"}')
LIST = ToolCall("call_y", "list_dir", '{"path": "."}')


def policy(extra: str = ""):
    return load_policy_text(ladder_policy(extra)).resolve()


def history(policy, executed: int):
    """``executed`` identical read_file calls, each with the same result: no progress."""
    messages = [{"role": "user", "content": "summarize a.txt"}]
    for i in range(executed):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": READ.arguments}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "same"})
    return build_trace(conversation_from_body({"messages": messages}), policy.trace_settings)


def test_nothing_refused_passes():
    p = policy()
    judged = judge_round(p, history(p, 1), [(READ,)])
    assert not judged.refused and decide(judged, p, 0).move == Move.PASS
    assert decide(None, p, 0).move == Move.PASS


def test_a_refused_first_call_is_reasked_while_the_budget_lasts_then_ends_the_run():
    p = policy()
    judged = judge_round(p, history(p, 3), [(READ, LIST)])
    assert judged.whole_round and judged.keep == (0,)
    first = decide(judged, p, 0)
    assert first.move == Move.REASK and first.refusal.call == READ and first.refusal.position == 0
    limit = p.interventions.reject.max_reasks
    insisted = decide(judged, p, limit)
    assert insisted.move == Move.TERMINATE and insisted.insisted and insisted.ending == ANSWER


def test_a_refused_later_call_drops_the_rest_of_its_round():
    p = policy()
    judged = judge_round(p, history(p, 3), [(LIST, READ, LIST)])
    decision = decide(judged, p, 0)
    assert decision.move == Move.DROP and decision.keep == (1,) and decision.refusal.position == 1


def test_a_terminate_level_refusal_ends_the_run_at_once():
    p = policy("interventions:\n  terminate:\n    mode: error\n")
    decision = decide(judge_round(p, history(p, 4), [(READ,)]), p, 0)
    assert decision.move == Move.TERMINATE and not decision.insisted and decision.ending == ERROR


def test_every_alternative_answer_is_judged_on_its_own():
    p = policy()
    trace = history(p, 3)
    some_keep = judge_round(p, trace, [(READ,), (LIST,)])
    assert not some_keep.whole_round and some_keep.keep == (0, 1)
    assert decide(some_keep, p, 0).move == Move.DROP  # choice 1 goes to the agent: no re-ask
    all_lost = judge_round(p, trace, [(LIST,), (READ,)])
    assert all_lost.keep == (1, 0)
    both = judge_round(p, trace, [(READ,), (READ,)])
    decision = decide(both, p, 0)
    assert decision.move == Move.REASK and len(decision.others) == 1


def test_a_stream_filter_says_whether_the_whole_round_was_withheld():
    p = policy()
    refused = judge_round(p, history(p, 3), [(READ,)])
    held = Judged(refused.refusals, refused.keep, whole_round=False)
    assert decide(held, p, 0).move == Move.DROP


def test_the_texts_and_a_request_path_terminate():
    p = policy()
    trace = history(p, 4)
    decision = decide(judge_round(p, trace, [(READ,)]), p, 0)
    assert "read_file" in observation(p, decision.judgement)
    assert "read_file" in final_text(p, trace, decision.judgement)
    ended = at_request(p, decision.judgement)
    assert ended.move == Move.TERMINATE and ended.ending == ANSWER and ended.refusal is None


@pytest.mark.parametrize("policy_value", [None])
def test_no_policy_passes(policy_value):
    p = policy()
    judged = judge_round(p, history(p, 3), [(READ,)])
    assert decide(judged, policy_value, 0).move == Move.PASS
