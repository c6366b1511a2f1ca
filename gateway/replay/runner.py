"""Replays one run through a policy, request by request, as the gateway would have seen it.

For each assistant message at index i: the request that produced it carried the messages before
it, and it goes through the server's own request path (``plan_request``: session, history marks,
compaction tracking, the agent's profile, the engine), so state-dependent detectors such as
``post_compaction`` fire as they would have; its tool calls are judged as proposals with the
response path's own ProposalJudge (reject, terminate; the first refusal ends the round). Each
segment's last body is its last request. Nothing is rewritten: the recorded history is judged as
it happened, so each action is reported at the first step where it would have fired.

A run's segments share one session: a log that names its session sends it as the client's
session header would; request bodies without one are found by the gateway's fingerprint, in a
store the replay may share between runs (a conversation recorded after the agent compacted its
history continues the session of the one recorded before it).

The policy is resolved as the gateway resolves it (``gateway.replay.policies``), the agent's
profile included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import structlog

from gateway.guard.history import HistoryCache
from gateway.guard.plan import RequestPlan
from gateway.guard.planner import plan_request
from gateway.guard.response import ProposalJudge
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, action_of
from gateway.policy.model import Policy
from gateway.replay.insist import ending, insists
from gateway.replay.model import KEPT, Mark, Result, Row
from gateway.replay.policies import Enforced, fallback_profile
from gateway.replay.run import Run, Segment
from gateway.state.base import StateStore
from gateway.state.memory import MemoryStore
from gateway.state.session import SESSION_HEADERS
from gateway.trace.model import Conversation, ToolEvent, Trace, Turn
from gateway.trace.normalize import args_info, result_info
from gateway.trace.pairing import is_genuine_user

# Each tool call's row by (message index in its segment, position in its round).
Where = dict[tuple[int, int], Row]


def replay(run: Run, policy: Policy, agent: str | None = None, store: StateStore | None = None) -> Result:
    """``store``: the run's session state (a fresh one when None: this run alone)."""
    return asyncio.run(replay_run(run, policy, agent, store if store is not None else MemoryStore()))


def replay_many(runs: Iterable[Run], policy: Policy, agent: str | None = None) -> list[Result]:
    """Each run on its own store, in one event loop."""

    async def every() -> list[Result]:
        return [await replay_run(run, policy, agent, MemoryStore()) for run in runs]

    return asyncio.run(every())


async def replay_run(run: Run, policy: Policy, agent: str | None, store: StateStore) -> Result:
    first = run.segments[0]
    model = first.kind.requests.model(first.body) or run.model or None
    policies = Enforced(policy, fallback_profile(run, policy, agent, model))
    headers = {"x-loopguard-agent": agent} if agent else {}
    if run.session:
        headers[SESSION_HEADERS[0]] = run.session
    result = Result(run.name, model, run.messages, run.requests, [], id=run.id, format=run.format)
    result.label, result.loop_at = run.label, run.loop_at
    profile = ""
    for number, segment in enumerate(run.segments):
        profile = await _segment(result, segment, run.base(number), policies, store, headers) or profile
    result.profile = profile
    result.agent = run.agent or profile or run.profile or run.format
    return result


async def _segment(
    result: Result, segment: Segment, base: int, policies: Enforced, store: StateStore, headers: dict[str, str]
) -> str:
    """Replays one segment into ``result``; the profile its requests were read with."""
    conv = segment.conversation()
    request = _Requests(segment, policies, store, headers)
    where: Where | None = None
    plan = None
    for turn in conv.turns:
        if turn.role != "assistant":
            continue
        plan = await request.plan(turn.index)
        if where is None:
            where = _rows(result, conv, plan.policy, base)
        _request_path(result, plan, where, cut=base + turn.index)
        if turn.tool_calls:
            _response_path(result, plan.policy, plan.trace, turn, where, conv, base)
    if not conv.turns or conv.turns[-1].role != "assistant":  # the recorded request itself
        plan = await request.plan(len(segment.messages))
        if where is None:
            where = _rows(result, conv, plan.policy, base)
        _request_path(result, plan, where, cut=base + len(segment.messages))
    return plan.policy.profile if plan is not None else ""


class _Requests:
    """The requests of one recorded conversation, each through the server's request path."""

    def __init__(self, segment: Segment, policies: Enforced, store: StateStore, headers: dict[str, str]) -> None:
        self.segment, self.policies, self.store, self.headers = segment, policies, store, headers
        # The run's own adapter: what it remembers is this conversation's alone.
        self.adapter, self.path = segment.kind.build(), segment.path
        self.history = HistoryCache()  # each request extends the previous one: parse only what is new
        self.log = structlog.get_logger("loopguard.replay")

    async def plan(self, length: int) -> RequestPlan:
        items = self.segment.messages[:length]
        payload = self.adapter.outgoing(self.segment.body, items)
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


def _rows(result: Result, conv: Conversation, eff: EffectivePolicy, base: int) -> Where:
    """The segment's calls as rows of ``result``, read with the policy (and profile) its
    requests are judged with."""
    settings = eff.trace_settings
    results = {t.tool_call_id: t for t in conv.turns if t.role == "tool" and t.tool_call_id}
    where: Where = {}
    seen: dict[str, int] = {}
    for turn in conv.turns:
        if is_genuine_user(turn):
            seen.clear()  # counts restart with each run, as the detectors' do
        for position, call in enumerate(turn.tool_calls if turn.role == "assistant" else ()):
            key = f"{call.name}\0{args_info(call.arguments, settings, tool=call.name).hash}"
            seen[key] = seen.get(key, 0) + 1
            answer = results.get(call.id)
            text = answer.text if answer is not None else None
            failed = answer is not None and (bool(answer.is_error) or result_info(answer.text, settings).error)
            row = Row(
                len(result.rows) + 1,
                base + turn.index,
                call.name,
                call.arguments[:KEPT],
                None if text is None else text[:KEPT],
                seen[key],
                key=key,
                failed=failed,
            )
            result.rows.append(row)
            where[(turn.index, position)] = row
    return where


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
    result: Result, eff: EffectivePolicy, trace: Trace, turn: Turn, where: Where, conv: Conversation, base: int
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
        _mark(result, row, mark, base + turn.index + 1)
        if refusal.judgement.action == Action.REJECT and position == 0 and insists(eff, conv, turn, call):
            _mark(result, row, ending(eff, finding), base + turn.index + 1)  # the re-asks end the run here
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
