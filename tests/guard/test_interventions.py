"""End to end: a real agent loop, a real looping model, the real gateway between them."""

import openai
import pytest
from support.agent import Agent
from support.looping import recovering, stubborn
from support.policies import ladder_policy
from support.seen import MARK, anchors, observations
from support.upstream import Reply


@pytest.mark.parametrize("stream", [False, True])
def test_stubborn_loop_is_warned_vetoed_then_terminated(start_guarded, stream):
    upstream, client, _ = start_guarded(stubborn())
    agent = Agent(client, tools={"read_file": lambda a: "contents of a.txt"}, stream=stream)

    answer = agent.run("summarize a.txt")

    # Three executions; the 4th call was vetoed (never executed), the insisting 5th terminated.
    assert agent.executions["read_file"] == 3
    assert agent.finish_reasons[-1] == "stop"
    assert answer and "stopped" in answer and "read_file" in answer
    # The model was warned before its 4th proposal, then saw the error observation in a re-ask.
    warned, reasked = upstream.requests[3]["json"], upstream.requests[4]["json"]
    assert anchors(warned) and "read_file" in anchors(warned)[0]
    assert observations(reasked) and "rejected" in observations(reasked)[0]
    # Then one request for a final answer with tools closed; this model still calls its tool
    # there, so the template ends the run. No further upstream calls after that.
    assert len(upstream.requests) == 6 and upstream.requests[5]["json"]["tool_choice"] == "none"


@pytest.mark.parametrize("stream", [False, True])
def test_vetoed_call_stays_visible_after_the_model_changes_course(start_guarded, stream):
    def model(request):
        messages = request["messages"]
        if messages[-1].get("role") == "tool" and messages[-1]["content"] == "a.txt b.txt":
            return Reply(content="done: listed the folder")
        if observations(request):
            return Reply(tool_calls=[("list_dir", '{"path": "."}')])
        return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])

    upstream, client, _ = start_guarded(model)
    agent = Agent(client, tools={"read_file": lambda a: "same", "list_dir": lambda a: "a.txt b.txt"}, stream=stream)

    assert agent.run("look around") == "done: listed the folder"
    assert agent.executions == {"read_file": 3, "list_dir": 1}
    # The request after list_dir ran still shows the model its refused call, before list_dir.
    last = upstream.requests[-1]["json"]["messages"]
    roles = [(m["role"], (m.get("tool_calls") or [{}])[0].get("function", {}).get("name")) for m in last]
    vetoed_at = next(i for i, m in enumerate(last) if str(m.get("content", "")).startswith(MARK))
    assert roles[vetoed_at - 1] == ("assistant", "read_file")
    assert roles[vetoed_at + 1] == ("assistant", "list_dir")
    # ...while the agent's own history never contained it.
    assert not any(str(m.get("content", "")).startswith(MARK) for m in agent.messages)


@pytest.mark.parametrize("stream", [False, True])
def test_warn_alone_lets_a_model_recover(start_guarded, stream):
    upstream, client, _ = start_guarded(recovering())
    agent = Agent(client, tools={"read_file": lambda a: "same"}, stream=stream)
    assert agent.run("read it") == "Stopping: here is what I found."
    assert agent.executions["read_file"] == 3
    assert not any(observations(r["json"]) for r in upstream.requests)


def test_warn_header_and_action_headers(start_guarded):
    _upstream, client, _ = start_guarded(recovering())
    agent = Agent(client, tools={"read_file": lambda a: "same"})
    agent.run("read it")
    assert agent.actions == ["pass", "pass", "pass", "warn"]


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_round_keeps_calls_before_the_looping_one(start_guarded, stream):
    def model(request):
        messages = request["messages"]
        if any(m.get("role") == "tool" and m["content"] == "listing" for m in messages):
            return Reply(content="finished")
        if sum(1 for m in messages if m.get("role") == "tool") >= 3:
            return Reply(tool_calls=[("list_dir", '{"path": "."}'), ("read_file", '{"path": "a.txt"}')])
        return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])

    _upstream, client, _ = start_guarded(model)
    agent = Agent(client, tools={"read_file": lambda a: "same", "list_dir": lambda a: "listing"}, stream=stream)
    assert agent.run("go") == "finished"
    # The round's looping read_file was dropped; list_dir, proposed before it, went through.
    assert agent.executions == {"read_file": 3, "list_dir": 1}


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_round_led_by_the_looping_call_is_reasked(start_guarded, stream):
    def model(request):
        if observations(request):
            return Reply(content="ok, giving up on that file")
        return Reply(tool_calls=[("read_file", '{"path": "a.txt"}'), ("list_dir", '{"path": "."}')])

    _upstream, client, _ = start_guarded(model)
    agent = Agent(client, tools={"read_file": lambda a: "same", "list_dir": lambda a: "listing"}, stream=stream)
    assert agent.run("go") == "ok, giving up on that file"
    # The looping call led the 4th round: the whole round was withheld, list_dir included.
    assert agent.executions == {"read_file": 3, "list_dir": 3}


def test_shadow_mode_changes_nothing(start_guarded):
    upstream, client, _ = start_guarded(stubborn(), ladder_policy("mode: shadow\n"))
    agent = Agent(client, tools={"read_file": lambda a: "same"})
    assert agent.run("go", max_steps=8) is None  # the loop runs to the agent's own cap
    assert agent.executions["read_file"] == 8
    assert set(agent.actions) == {"pass"}
    assert not any(anchors(r["json"]) or observations(r["json"]) for r in upstream.requests)
    # Forwarded byte for byte: the upstream got exactly what the SDK sent.
    assert all(r["raw"] for r in upstream.requests)


def test_max_action_warn_caps_the_ladder(start_guarded):
    upstream, client, _ = start_guarded(stubborn(), ladder_policy("max_action: warn\n"))
    agent = Agent(client, tools={"read_file": lambda a: "same"})
    assert agent.run("go", max_steps=7) is None
    assert agent.executions["read_file"] == 7  # never vetoed, never terminated
    assert agent.actions[3:] == ["warn"] * 4
    assert not any(observations(r["json"]) for r in upstream.requests)


def test_terminate_as_error_raises_in_the_sdk(start_guarded):
    policy = ladder_policy("interventions:\n  terminate: {mode: error}\n")
    _upstream, client, _ = start_guarded(stubborn(), policy)
    agent = Agent(client, tools={"read_file": lambda a: "same"})
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        agent.run("go")
    assert caught.value.code == "loop_detected"
    assert agent.executions["read_file"] == 3


def test_per_agent_override_by_header(start_guarded):
    policy = ladder_policy("""
        agents:
          - match: {header: patient-bot}
            detectors:
              no_progress: {warn_at: 6}
        """)
    _upstream, client, _ = start_guarded(stubborn(), policy)
    patient = Agent(client, tools={"read_file": lambda a: "same"}, headers={"x-loopguard-agent": "patient-bot"})
    patient.run("go", max_steps=5)
    # warn raised to 6 moved reject/terminate up too (ordering corrected), so nothing yet.
    assert patient.actions == ["pass"] * 5
    default = Agent(client, tools={"read_file": lambda a: "same"})
    default.run("go", max_steps=5)
    assert default.actions == ["pass", "pass", "pass", "terminate"]  # warned, vetoed, then stopped


def test_history_already_at_reject_level_has_its_result_replaced(start_guarded):
    """After a restart (no veto memory) an executed 4th repeat is shown as rejected."""
    upstream, client, _ = start_guarded(lambda r: Reply(content="fine"))
    messages = [{"role": "user", "content": "go"}]
    for i in range(4):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "same"})
    client.chat.completions.create(model="m", messages=messages)
    forwarded = upstream.last["json"]["messages"]
    assert forwarded[-2]["content"].startswith(MARK)  # the 4th result, replaced
    assert forwarded[-1]["role"] == "system"  # plus the warning anchor
    assert [m["content"] for m in forwarded[:-2]] == [m["content"] for m in messages[:-1]]
