"""Incremental judging decides exactly what the full pass decides, request by request.

A request that continues a conversation the process knows is read and judged by what it adds
(``protocols.grown`` parses only the new items, ``guard.history`` reads only the new turns, the
trace builder continues its last build, the judgement of an unchanged trace is kept). Every run
of the test fixtures (``support.fixture_runs``: the scripts in four wire formats, each in chat
and one other, the real CLIs' recorded sessions, the development corpus) is sent through the
request path twice, each side with its own session store and fleet: once with those caches,
once with none (every request parsed, read and traced whole). Each request is sent as bytes, as
a client sends it; some twice in a row (a retry); some runs have their history edited midway, go
back to an earlier request and branch, or lose the caches midway (evicted). On every request both sides must give
the same judgement (every finding: detector, count, steps), the same trace and edits, the same
judgement of each call the model answered with (a refused first call is stored as the pipeline
stores it, and shown on later requests), and leave the same session state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import orjson
import pytest
import structlog
from support.fixture_runs import CORPUS, PROTOCOLS, FixtureRun, corpus_runs, recorded_runs, script_runs

from gateway.audit.bus import AuditBus
from gateway.config import FleetConfig
from gateway.fleet.service import Fleet
from gateway.guard import decision
from gateway.guard import store as memory
from gateway.guard.history import HistoryCache
from gateway.guard.plan import RequestPlan, veto_record
from gateway.guard.planner import plan_request
from gateway.guard.response import ProposalJudge
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.policy.loader import load_shipped_policy
from gateway.protocols.grown import GrownBodies
from gateway.protocols.registry import BY_NAME, build
from gateway.replay.run import Segment
from gateway.state.fleet_memory import MemoryFleet
from gateway.state.memory import MemoryStore
from gateway.trace.model import ToolCall, Trace
from gateway.wire import codec

LOG = structlog.get_logger("loopguard.test")
POLICY = load_shipped_policy("default")
HEADERS = {"authorization": "Bearer sk-differential"}


@dataclass(frozen=True)
class Send:
    request: int  # which of the run's requests
    edited: bool = False  # with an earlier message changed (the history was edited)


EVICT = "evict"  # the incremental side forgets every conversation it knew
Step = Send | str


def steps(count: int, number: int) -> list[Step]:
    """The run's requests in order, every third sent twice; one run in three also has its
    history edited midway, goes back to an earlier request and branches from there, and loses
    the caches in between."""
    out: list[Step] = []
    for k in range(count):
        out += [Send(k)] * (2 if k % 3 == 2 else 1)
    if number % 3 or count < 6:
        return out
    edit, back, evict = count // 2, count // 4, 3 * count // 4
    out = [s for s in out if not isinstance(s, Send) or s.request < edit]
    out += [Send(k, edited=True) for k in range(edit, evict)]
    out += [Send(k) for k in range(back, evict)]  # back to the history as it was: a branch
    out += [EVICT, *(Send(k) for k in range(evict, count))]
    return out


@dataclass(frozen=True)
class Request:
    items: list[Any]  # the conversation the client sends
    calls: tuple[ToolCall, ...]  # what the model answered it with


def requests(run: FixtureRun) -> tuple[Segment, list[Request]]:
    """The request before each of the model's messages (its calls the answer), and the whole
    conversation when it does not end with one."""
    segment = Segment(run.body, run.protocol)
    turns = segment.conversation().turns
    ends: dict[int, tuple[ToolCall, ...]] = {}
    for turn in turns:
        if turn.role == "assistant":
            ends.setdefault(turn.index, turn.tool_calls)
    if not turns or turns[-1].role != "assistant":
        ends.setdefault(len(segment.messages), ())
    return segment, [Request(segment.messages[:end], calls) for end, calls in sorted(ends.items())]


def edited(items: list[Any]) -> list[Any]:
    """The same conversation with one early message changed (its first text)."""
    if len(items) < 3:
        return items
    at = len(items) // 3
    return [*items[:at], _edit(items[at]), *items[at + 1 :]]


def _edit(value: Any) -> Any:
    if isinstance(value, str):
        return value + " (edited)"
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, str | dict | list) and (changed := _edit(inner)) is not inner:
                return {**value, key: changed}
    if isinstance(value, list):
        for k, inner in enumerate(value):
            if (changed := _edit(inner)) is not inner:
                return [*value[:k], changed, *value[k + 1 :]]
    return value


class Side:
    """One gateway's request path: with the caches that read a conversation by what it adds,
    or with none."""

    def __init__(self, incremental: bool) -> None:
        self.incremental = incremental
        self.bodies = GrownBodies() if incremental else None
        self.history = HistoryCache() if incremental else None
        self.store = MemoryStore()
        self.fleet = Fleet(FleetConfig(), MemoryFleet(), AuditBus(), LOG)
        self.adapters = build()

    def evict(self) -> None:
        if self.bodies is not None and self.history is not None:
            self.bodies.clear()
            self.history.clear()

    async def plan(self, run: FixtureRun, segment: Segment, body: bytes) -> RequestPlan:
        adapter = self.adapters.named(run.protocol)
        field = adapter.requests.items_field
        payload = self.bodies.read(body, field)[0] if self.bodies is not None else codec.loads(body)
        return await plan_request(
            adapter,
            payload,
            adapter.requests.items(payload),
            {**HEADERS, **run.headers},
            run.path or segment.path,
            POLICY,
            self.store,
            LOG,
            history=self.history,
            size=len(body),
            fleet=self.fleet,
        )

    async def answer(self, run: FixtureRun, plan: RequestPlan, calls: tuple[ToolCall, ...]) -> list[Judgement]:
        """Each call of the model's answer judged in order until one is refused; a refused
        first call is stored as the pipeline stores it (shown on the session's later requests)."""
        judge = ProposalJudge(plan.policy, plan.trace)
        for position, call in enumerate(calls):
            if not judge.judge(call, position):
                break
        refusal = judge.refusal
        if refusal is not None and refusal.position == 0 and refusal.judgement.action == Action.REJECT:
            adapter = self.adapters.named(run.protocol)
            exchange = adapter.edits.veto_exchange(refusal.call, decision.observation(plan.policy, refusal.judgement))
            record = veto_record(plan, exchange, adapter.declared.id_fields)
            await memory.add_veto(self.store, plan.session, record, LOG)
        return [*judge.shadowed, *([refusal.judgement] if refusal else [])]


def comparable(trace: Trace) -> Trace:
    """The trace as a value: the fleet's facts without the moment they were read."""
    return replace(trace, fleet=replace(trace.fleet, now=0.0)) if trace.fleet is not None else trace


async def differential(run: FixtureRun, number: int) -> int:
    """Sends the run to both sides; the requests compared."""
    incremental, full = Side(True), Side(False)
    segment, sent = requests(run)
    compared = 0
    for at, step in enumerate(steps(len(sent), number)):
        if step == EVICT:
            incremental.evict()
            continue
        assert isinstance(step, Send)
        request = sent[step.request]
        items = edited(request.items) if step.edited else request.items
        body = orjson.dumps(BY_NAME[run.protocol].requests.with_items(run.body, items))
        where = f"{run.name}, step {at} (request {step.request}{', edited' if step.edited else ''})"
        one, other = await incremental.plan(run, segment, body), await full.plan(run, segment, body)
        assert one.judgement == other.judgement, where
        assert (one.session, one.changed, one.messages) == (other.session, other.changed, other.messages), where
        assert comparable(one.trace) == comparable(other.trace), where
        answered = await incremental.answer(run, one, request.calls), await full.answer(run, other, request.calls)
        assert answered[0] == answered[1], where
        states = [await side.store.session_state(one.session) for side in (incremental, full)]
        assert states[0] == states[1], where
        compared += 1
    return compared


def _chunk(runs: Callable[[], list[FixtureRun]], part: int, parts: int) -> Callable[[], list[FixtureRun]]:
    return lambda: runs()[part::parts]


# Every script in chat, and each also in one of the other formats in turn: what the formats
# change is how a body is parsed and grown, which a third of the scripts each exercises as well
# as all would; the recorded sessions and the corpus are sent whole.
FIRST, *OTHERS = PROTOCOLS
GROUPS: dict[str, Callable[[], list[FixtureRun]]] = {
    f"scripts in {FIRST}": lambda: script_runs(FIRST),
    **{
        f"scripts in {protocol}": _chunk(lambda p=protocol: script_runs(p), k, len(OTHERS))
        for k, protocol in enumerate(OTHERS)
    },
    "recorded CLI sessions": recorded_runs,
    **{f"corpus, part {k + 1} of 4": _chunk(corpus_runs, k, 4) for k in range(4)},
}


@pytest.mark.parametrize("group", GROUPS)
def test_incremental_judging_is_the_full_pass(group):
    if group.startswith("corpus") and not CORPUS.exists():
        pytest.skip(f"the development corpus is not at {CORPUS}")
    runs = GROUPS[group]()
    assert runs

    async def every() -> int:
        return sum([await differential(run, number) for number, run in enumerate(runs)])

    compared = asyncio.run(every())
    assert compared >= 2 * len(runs)  # every run's requests were judged, not only its first
