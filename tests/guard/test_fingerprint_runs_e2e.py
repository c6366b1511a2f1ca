"""End to end: two runs of the same task without a session id share a fingerprint session, and
the second must not pay for what the first did.

A fleet running one job twice, or a retried job, sends the same system prompt, first user
message and tools, so both runs land in one fingerprint session. With a deterministic model (and
call ids numbered by position, as some providers and frameworks give them) the second run's
history is byte for byte the first run's, up to the request where the first run was refused. The
vetoes the first run left must not be re-shown there: the second run would be rejected for calls
it never proposed, and a job retried a few times would be terminated earlier each time.
"""

import asyncio
import time

import orjson
import pytest
import structlog
from support.agent import Agent
from support.policies import ladder_policy
from support.seen import observations
from support.upstream import Reply

from gateway.audit.memory_sink import MemorySink
from gateway.config import Config
from gateway.guard.plan import veto_record
from gateway.guard.planner import plan_request
from gateway.policy.holder import PolicyHolder
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.state.memory import MemoryStore
from gateway.trace.model import ToolCall

SYSTEM = {"role": "system", "content": "You are a file agent."}
TASK = "summarize a.txt"


def completion(request: dict, reply: Reply) -> Reply:
    """``reply`` as a completion whose call ids are numbered by position in the conversation:
    the same history gets the same ids, run after run."""
    message: dict = {"role": "assistant", "content": reply.content}
    position = len(request["messages"])
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{position}_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
    body = {
        "id": f"chatcmpl-{position}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(body=orjson.dumps(body))


READ = Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])
LIST = Reply(tool_calls=[("list_dir", '{"path": "."}')])


def first_run(request: dict) -> Reply:
    """Re-reads a.txt until it is refused, then lists the folder, then answers."""
    if request["messages"][-1].get("content") == "a.txt b.txt":
        return Reply(content="done: listed the folder")
    return LIST if observations(request) else READ


def second_run(request: dict) -> Reply:
    """The same task sampled differently: three reads of a.txt, then it lists the folder itself."""
    if request["messages"][-1].get("content") == "a.txt b.txt":
        return Reply(content="done: a.txt summarized")
    reads = sum(1 for m in request["messages"] if m.get("role") == "tool")
    return READ if reads < 3 else LIST


def agent_for(client) -> Agent:
    agent = Agent(client, tools={"read_file": lambda a: "same", "list_dir": lambda a: "a.txt b.txt"})
    agent.messages.append(dict(SYSTEM))
    return agent


@pytest.fixture
def fleet(start_guarded):
    """A gateway (3/4/5 ladder) in front of a model whose behaviour the test switches per run.
    Nothing of a run's session state reaches the next run; the fleet's recall (a new run of the
    agent warned at its first repeat of a loop an earlier run was stopped for, on purpose:
    tests/fleet/test_recall_e2e.py) is off, so what is asserted here is the session state alone."""
    behaviour = {"model": first_run}
    upstream, client, _ = start_guarded(
        lambda request: completion(request, behaviour["model"](request)),
        ladder_policy(),
        config={"fleet": {"recall": False}},
    )
    events = MemorySink()
    client.gateway_app.state.gateway.audit.add(events)
    return behaviour, upstream, client, events


def test_a_second_run_of_the_same_task_does_not_inherit_the_first_runs_vetoes(fleet):
    behaviour, upstream, client, events = fleet
    run1 = agent_for(client)
    assert run1.run(TASK) == "done: listed the folder"
    # The first run looped: its 4th read was vetoed (never executed), it changed course.
    assert run1.executions == {"read_file": 3, "list_dir": 1}
    assert run1.actions == ["pass", "pass", "pass", "reject", "pass"]
    # Its vetoed exchange stays visible to its own model after the veto (the run continued).
    assert observations(upstream.requests[-1]["json"])
    refused = [e for e in events.events if e.action in ("reject", "terminate")]
    assert [(e.action, e.count) for e in refused] == [("reject", 4)]

    behaviour["model"] = second_run
    events.events.clear()
    start = len(upstream.requests)
    run2 = agent_for(client)
    assert run2.run(TASK) == "done: a.txt summarized"

    # The second run's first calls are judged on what it did: three reads (a warn at the third),
    # never a reject for the read the first run was refused.
    assert run2.executions == {"read_file": 3, "list_dir": 1}
    assert run2.actions == ["pass", "pass", "pass", "warn", "pass"]
    assert not [e for e in events.events if e.action in ("reject", "terminate")]
    assert not any(observations(r["json"]) for r in upstream.requests[start:])
    # Its history really was the first run's, call ids included, up to the first run's veto.
    first = upstream.requests[3]["json"]["messages"][:8]
    assert upstream.requests[start + 3]["json"]["messages"][:8] == first


def test_a_retried_job_is_not_judged_more_harshly_each_time(fleet):
    """A job that loops the same way each time it is retried meets the same ladder each time:
    warned at its 3rd read, its 4th refused, its 5th ending the run."""
    behaviour, _upstream, client, events = fleet
    behaviour["model"] = lambda request: READ  # never changes its call
    runs = []
    for _ in range(3):
        events.events.clear()
        agent = agent_for(client)
        agent.run(TASK)
        assert agent.finish_reasons[-1] == "stop"
        runs.append((agent.actions, dict(agent.executions), [(e.action, e.count, e.phase) for e in events.events]))
    assert runs[0] == (
        ["pass", "pass", "pass", "terminate"],
        {"read_file": 3},
        [("warn", 3, "request"), ("reject", 4, "response"), ("terminate", 5, "response")],
    )
    assert runs[1] == runs[0] and runs[2] == runs[0]


def test_the_same_run_keeps_its_vetoes_when_it_compacts(fleet):
    """A compaction (a summary message, the opening kept) continues the run: its vetoes stay."""
    behaviour, upstream, client, _events = fleet
    run1 = agent_for(client)
    run1.run(TASK)
    assert observations(upstream.requests[-1]["json"])
    # Compacted (shorter than its last request): the work up to the refusal kept, what
    # followed replaced by a summary.
    run1.messages = run1.messages[:8]
    behaviour["model"] = lambda request: Reply(content="ok")
    start = len(upstream.requests)
    assert run1.run("Summary of the work so far: a.txt read, the folder listed. Continue.") == "ok"
    assert [len(observations(r["json"])) for r in upstream.requests[start:]] == [1]


# --- the request path alone: which sessions forget, and when ----------------------------------

OPENING = [SYSTEM, {"role": "user", "content": TASK}]
FIRST_READ = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_2_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_2_0", "content": "same"},
]


def plan(store, messages, headers):
    payload = {"model": "m", "messages": messages}
    policies = PolicyHolder(Config().policy)
    return asyncio.run(
        plan_request(
            CHAT,
            payload,
            CHAT.requests.items(payload),
            headers,
            "/v1/chat/completions",
            policies.current,
            store,
            structlog.get_logger(),
        )
    )


@pytest.mark.parametrize(
    "headers, inherited",
    [
        ({}, False),  # a fingerprint session: the restart is another run
        ({"x-loopguard-session": "job-7"}, True),  # the client says it is the same session: kept
    ],
)
def test_a_restart_with_the_same_opening_ends_only_a_fingerprint_session_s_vetoes(headers, inherited):
    store = MemoryStore()
    refused_in = plan(store, [*OPENING, *FIRST_READ], headers)
    exchange = CHAT.edits.veto_exchange(ToolCall("call_4_0", "read_file", '{"path": "a.txt"}'), "[loopguard] refused")
    asyncio.run(store.add_veto(refused_in.session, veto_record(refused_in, exchange)))
    assert len(plan(store, [*OPENING, *FIRST_READ], headers).messages) == 6  # the same run: shown

    restart = plan(store, list(OPENING), headers)  # shorter, no summary: the task from the start
    assert restart.messages == OPENING
    replayed = plan(store, [*OPENING, *FIRST_READ], headers)  # byte for byte the refused request
    assert (len(replayed.messages) == 6) is inherited
    assert bool(asyncio.run(store.vetoes(refused_in.session))) is inherited
