"""Replays one conversation through a policy, turn by turn, as the gateway would have seen it.

For each assistant message at index i: the request that produced it carried messages[:i], and
it goes through the server's own request path (``plan_request``: session, history marks,
compaction tracking, the engine), so state-dependent detectors such as ``post_compaction`` fire
as they would have; its tool calls are judged as proposals with the response path's own
ProposalJudge (reject, terminate; the first refusal ends the round). The recorded body itself is
the last request. Nothing is rewritten: the recorded history is judged as it happened, so each
action is reported at the first step where it would have fired.

Session state lives in a store shared by the conversations of one replay run, as the server's
store is shared by requests: a conversation recorded after the agent compacted its history
continues the session of the one recorded before it.
"""

from __future__ import annotations

import asyncio
import dataclasses

import structlog

from gateway.guard.history import HistoryCache
from gateway.guard.plan import RequestPlan
from gateway.guard.planner import plan_request
from gateway.guard.response import ProposalJudge
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, action_of
from gateway.policy.model import Policy
from gateway.protocols.chat.protocol import DECLARED as CHAT
from gateway.replay.insist import ending, insists
from gateway.replay.model import Mark, Result, Row
from gateway.replay.reader import Recorded
from gateway.state.base import StateStore
from gateway.state.memory import MemoryStore
from gateway.trace.model import Conversation, ToolEvent, Trace, Turn
from gateway.trace.normalize import args_info
from gateway.trace.pairing import is_genuine_user

# Each tool call's row by (message index, position in its round).
Where = dict[tuple[int, int], Row]
CHAT_PATH = CHAT.routes[0]


class _Enforced:
    """The policy as replay resolves it: a shadow policy shows what it would do when enforced
    (its max_action cap still applies)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def resolve(
        self, agent: str | None = None, api_key_sha256: str | None = None, model: str | None = None, path: str = ""
    ) -> EffectivePolicy:
        eff = self.policy.resolve(agent, api_key_sha256, model, path)
        return dataclasses.replace(eff, mode="enforce") if eff.shadow else eff


def effective(policy: Policy, agent: str | None, path: str = CHAT_PATH, model: str | None = None) -> EffectivePolicy:
    """The policy the gateway would resolve for a request, enforcing (``model``: as its
    adapter reads it; None: the request names none)."""
    return _Enforced(policy).resolve(agent=agent, model=model, path=path)


def replay(recorded: Recorded, policy: Policy, agent: str | None = None, store: StateStore | None = None) -> Result:
    """``store``: the run's session state (a fresh one when None: this conversation alone)."""
    return asyncio.run(_replay(recorded, policy, agent, store if store is not None else MemoryStore()))


async def _replay(recorded: Recorded, policy: Policy, agent: str | None, store: StateStore) -> Result:
    body = recorded.body
    model = recorded.kind.requests.model(body) or None
    eff = effective(policy, agent, recorded.path, model)
    conv = recorded.conversation()
    rows, where = _rows(conv, eff)
    result = Result(recorded.label, model, len(recorded.messages), recorded.requests, rows)
    request = _Requests(recorded, _Enforced(policy), store, {"x-loopguard-agent": agent} if agent else {})
    for turn in conv.turns:
        if turn.role == "assistant":
            plan = await request.plan(turn.index)
            _request_path(result, plan, where, cut=turn.index)
            if turn.tool_calls:
                _response_path(result, plan.policy, plan.trace, turn, where, conv)
    if not conv.turns or conv.turns[-1].role != "assistant":  # the recorded request itself
        _request_path(result, await request.plan(len(recorded.messages)), where, cut=len(recorded.messages))
    return result


class _Requests:
    """The requests of one recorded conversation, each through the server's request path."""

    def __init__(self, recorded: Recorded, policies: _Enforced, store: StateStore, headers: dict[str, str]) -> None:
        self.recorded, self.policies, self.store, self.headers = recorded, policies, store, headers
        # The run's own adapter: what it remembers is this conversation's alone.
        self.adapter, self.path = recorded.kind.build(), recorded.path
        self.history = HistoryCache()  # each request extends the previous one: parse only what is new
        self.log = structlog.get_logger("loopguard.replay")

    async def plan(self, length: int) -> RequestPlan:
        items = self.recorded.messages[:length]
        payload = self.adapter.outgoing(self.recorded.body, items)
        return await plan_request(
            self.adapter,
            payload,
            items,
            self.headers,
            self.path,
            self.policies,
            self.store,
            self.log,
            history=self.history,
        )


def _rows(conv: Conversation, eff: EffectivePolicy) -> tuple[list[Row], Where]:
    results = {t.tool_call_id: t.text for t in conv.turns if t.role == "tool" and t.tool_call_id}
    rows: list[Row] = []
    where: Where = {}
    seen: dict[tuple[str, str], int] = {}
    for turn in conv.turns:
        if is_genuine_user(turn):
            seen.clear()  # counts restart with each run, as the detectors' do
        for position, call in enumerate(turn.tool_calls if turn.role == "assistant" else ()):
            key = (call.name, args_info(call.arguments, eff.trace_settings).hash)
            seen[key] = seen.get(key, 0) + 1
            row = Row(len(rows) + 1, turn.index, call.name, call.arguments, results.get(call.id), seen[key])
            rows.append(row)
            where[(turn.index, position)] = row
    return rows, where


def _request_path(result: Result, plan: RequestPlan, where: Where, cut: int) -> None:
    eff, trace = plan.policy, plan.trace
    latest = trace.latest
    if latest is None:
        return
    row = _row_of(trace, latest, where)
    for finding in plan.judgement.findings:
        action = min(action_of(eff.detectors[finding.detector], finding), eff.max_action)
        if action > Action.PASS and row is not None:
            _mark(
                result,
                row,
                Mark(action.label, finding.detector, "request", finding.count, finding.description),
                cut if action == Action.TERMINATE else None,
            )


def _response_path(
    result: Result, eff: EffectivePolicy, trace: Trace, turn: Turn, where: Where, conv: Conversation
) -> None:
    judge = ProposalJudge(eff, trace)
    for position, call in enumerate(turn.tool_calls):
        if judge.judge(call, position):
            continue
        refusal = judge.refusal
        assert refusal is not None, "a call judge() held back has its refusal"
        finding = refusal.judgement.finding
        assert finding is not None, "a refusal's judgement rejects or terminates: a finding decided it"
        row = where[(turn.index, position)]
        mark = Mark(refusal.judgement.action.label, finding.detector, "response", finding.count, finding.description)
        _mark(result, row, mark, turn.index + 1)
        if refusal.judgement.action == Action.REJECT and position == 0 and insists(eff, conv, turn, call):
            _mark(result, row, ending(eff, finding), turn.index + 1)  # the re-asks end the run here
        for later in range(position + 1, len(turn.tool_calls)):
            where[(turn.index, later)].dropped = True
        return


def _row_of(trace: Trace, event: ToolEvent, where: Where) -> Row | None:
    """The row of a trace event: its message, and its position among that message's calls."""
    position = sum(1 for e in trace.events if e.message_index == event.message_index and e.step < event.step)
    if trace.skipped:  # calls of the same message before the horizon are not materialized
        position = _position_by_id(trace, event, where)
    return where.get((event.message_index, position))


def _position_by_id(trace: Trace, event: ToolEvent, where: Where) -> int:
    turn = next((t for t in trace.turns if t.index == event.message_index), None)
    ids = [c.id for c in turn.tool_calls] if turn else []
    return ids.index(event.call_id) if event.call_id in ids else 0


def _mark(result: Result, row: Row, mark: Mark, cut: int | None) -> None:
    """Only where each (detector, action) fires first: later turns keep matching the same loop,
    and the timeline would drown in repeats of one decision. Turns are replayed in order, so the
    first time seen is the earliest step. Nothing is marked after the point where the run would
    have been stopped or changed course: that part of the recording would not have happened."""
    if result.cut is not None and row.message >= result.cut:
        return
    steps = result.by_detector.setdefault(mark.detector, {})
    if mark.action in steps:
        return
    steps[mark.action] = row.step
    row.marks.append(mark)
    first = result.first.get(mark.action)
    if first is None or row.step < first[0]:
        result.first[mark.action] = (row.step, mark.detector)
    # Where the run would have been stopped: the first terminate, else the first vetoed call.
    stops = mark.action == "terminate" or (mark.action == "reject" and mark.phase == "response")
    if stops and cut is not None:
        better = (
            result.cut_step is None
            or row.step < result.cut_step
            or (row.step == result.cut_step and cut < (result.cut or cut))
        )
        if better:
            result.cut, result.cut_step = cut, row.step
