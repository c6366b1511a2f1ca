"""The settling loop every front end runs (the gateway's pipeline, the LiteLLM guardrail): what a
decision makes of a judged reply, with a front end that records what it was asked to do."""

import asyncio
from collections.abc import Sequence

from support.policies import ladder_policy

from gateway.guard.decision import Judged, Move, judge_round
from gateway.guard.response import Refusal
from gateway.guard.settle import settle
from gateway.policy.loader import load_policy_text
from gateway.protocols.chat.parse import conversation_from_body
from gateway.trace.builder import build_trace
from gateway.trace.model import ToolCall

READ = ToolCall("call_x", "read_file", '{"path": "a.txt"}')
LIST = ToolCall("call_y", "list_dir", '{"path": "."}')
POLICY = load_policy_text(ladder_policy()).resolve()

Reply = tuple[tuple[ToolCall, ...], ...]  # each alternative answer's proposed calls


def looping_trace():
    """Three identical read_file calls with the same result: a fourth is refused (reject)."""
    messages: list[dict] = [{"role": "user", "content": "summarize a.txt"}]
    for i in range(3):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": READ.arguments}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "same"},
        ]
    return build_trace(conversation_from_body({"messages": messages}), POLICY.trace_settings)


class Recorder:
    """A front end whose model answers ``answers`` in turn on re-asks."""

    def __init__(self, *answers: Reply, judged: bool = True) -> None:
        self.answers = list(answers)
        self.done: list[str] = []
        self.reasks = 0
        self.policy = POLICY if judged else None
        self.trace = looping_trace()

    def judged(self, reply: Reply) -> Judged | None:
        return judge_round(POLICY, self.trace, reply)

    async def veto(self, refusal: Refusal) -> None:
        self.done.append(f"veto {refusal.call.id}")

    def dropped(self, others: Sequence[Refusal]) -> None:
        self.done.append(f"dropped {len(others)}")

    def keep_calls(self, reply: Reply, keep: tuple[int, ...]) -> Reply:
        self.done.append(f"keep {keep}")
        return tuple(calls[:n] for calls, n in zip(reply, keep, strict=True))

    async def reask(self) -> Reply:
        self.reasks += 1
        self.done.append("reask")
        return self.answers.pop(0)


def test_a_reply_with_nothing_refused_goes_out_as_it_is():
    front = Recorder()
    reply = ((LIST,),)
    settled = asyncio.run(settle(front, reply))
    assert settled.reply is reply and settled.decision.move == Move.PASS and front.done == []


def test_an_unjudged_request_passes_whatever_it_proposes():
    front = Recorder(judged=False)
    settled = asyncio.run(settle(front, ((READ,),)))
    assert settled.decision.move == Move.PASS and front.done == []


def test_a_refused_first_call_is_vetoed_and_re_asked_until_a_reply_passes():
    front = Recorder(((LIST,),))
    settled = asyncio.run(settle(front, ((READ,),)))
    assert settled.reply == ((LIST,),) and settled.decision.move == Move.PASS
    assert front.done == ["veto call_x", "dropped 0", "reask"]


def test_a_refused_later_call_keeps_the_calls_before_it():
    front = Recorder()
    settled = asyncio.run(settle(front, ((LIST, READ, LIST),)))
    assert settled.decision.move == Move.DROP and settled.reply == ((LIST,),)
    assert front.done == ["veto call_x", "dropped 0", "keep (1,)"]


def test_every_answer_refused_vetoes_the_first_and_records_the_others():
    front = Recorder(((LIST,), (LIST,)))
    settled = asyncio.run(settle(front, ((READ,), (READ,))))
    assert settled.decision.move == Move.PASS
    assert front.done == ["veto call_x", "dropped 1", "reask"]


def test_a_model_that_insists_ends_the_run_once_the_re_asks_ran_out():
    limit = POLICY.interventions.reject.max_reasks
    front = Recorder(*[((READ,),)] * limit)
    settled = asyncio.run(settle(front, ((READ,),)))
    decision = settled.decision
    assert decision.move == Move.TERMINATE and decision.insisted and front.reasks == limit
    assert front.done == ["veto call_x", "dropped 0", "reask"] * limit  # the last refusal is not vetoed
