"""End to end, under the shipped default policy: the loops real agents make (interleaved with
think calls, across user turns, reworded) are caught; a veto holds whatever the warning
placement; two runs of the same task are two sessions; healthy look-alikes run untouched."""

from __future__ import annotations

import itertools
import json

import pytest
from support.agent import Agent, declare
from support.looping import stubborn
from support.policies import ladder_policy
from support.seen import observations
from support.upstream import Reply

from gateway.policy.loader import shipped_policy_path

DEFAULT = shipped_policy_path("default").read_text(encoding="utf-8")
LOCKED = "Error: order #W2378156 cannot be modified: order is locked by a pending exchange"
UPDATE = json.dumps({"order_id": "#W2378156", "item_ids": ["1008292230"], "new_item_ids": ["1008292231"]})
TOOLS = declare("update_order", "think", "research_agent", "pay_order", "read_file", "Edit", "Bash")


def last_call(request: dict) -> str | None:
    for message in reversed(request["messages"]):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            return message["tool_calls"][0]["function"]["name"]
    return None


def calls_made(request: dict, name: str) -> int:
    return sum(
        1
        for m in request["messages"]
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == name
    )


# --- interleaved ------------------------------------------------------------------------------


def update_then_think(request: dict) -> Reply:
    """Retries the failing update forever, thinking something new in between."""
    if last_call(request) == "update_order":
        n = calls_made(request, "think")
        return Reply(
            tool_calls=[("think", json.dumps({"thought": f"It failed again ({n}); I will retry the update."}))]
        )
    return Reply(tool_calls=[("update_order", UPDATE)])


@pytest.mark.parametrize("stream", [False, True])
def test_a_loop_with_think_calls_between_is_warned_vetoed_and_ended(start_guarded, stream):
    upstream, client, _ = start_guarded(update_then_think, DEFAULT)
    agent = Agent(client, tools={"update_order": lambda a: LOCKED, "think": lambda a: ""}, stream=stream, specs=TOOLS)
    answer = agent.run("change the item in my order", max_steps=30)
    assert answer and "stopped" in answer and "update_order" in answer
    assert agent.executions["update_order"] == 4  # the 5th was vetoed, never run
    warned = [r for r in upstream.requests if "[LoopGuard]" in json.dumps(r["json"]["messages"][-1:])]
    assert warned, "the model was warned before the veto"
    if not stream:
        assert "warn" in agent.actions and agent.actions[-1] == "terminate"


def update_then_look(request: dict) -> Reply:
    """Retries the failing update forever, looking up another record in between."""
    if last_call(request) == "update_order":
        n = calls_made(request, "get_order")
        return Reply(tool_calls=[("get_order", json.dumps({"order_id": f"#W{n}"}))])
    return Reply(tool_calls=[("update_order", UPDATE)])


@pytest.mark.parametrize("stream", [False, True])
def test_a_loop_with_new_reads_between_is_warned_then_escalates_when_the_warning_is_ignored(start_guarded, stream):
    """New reads between the repeats keep the repeat count itself at a warning (they might be
    the agent finding something out); the identical failing update after that warning is the
    warning ignored, which escalates: refused, then the run ends."""
    upstream, client, _ = start_guarded(update_then_look, DEFAULT)
    tools = {"update_order": lambda a: LOCKED, "get_order": lambda a: json.dumps({"order": a["order_id"]})}
    agent = Agent(client, tools=tools, stream=stream, specs=declare("update_order", "get_order"))
    answer = agent.run("change the item in my order", max_steps=30)
    assert answer and "stopped" in answer and "update_order" in answer
    assert agent.executions["update_order"] == 4  # warned after the 3rd and the 4th; then refused
    warned = [r for r in upstream.requests if "[LoopGuard]" in json.dumps(r["json"]["messages"][-1:])]
    assert warned, "the model was warned before the veto"
    if not stream:
        assert "warn" in agent.actions and agent.actions[-1] == "terminate"


def fix_think_test(request: dict) -> Reply:
    """A different fix each time, a thought between, the same failing test until the fifth fix
    makes it pass: the same failure after each fix is warned from the third on (its ladder
    refuses at the sixth), and the run finishes with every call executed."""
    edits = calls_made(request, "Edit")
    last = last_call(request)
    if last == "Bash" and edits >= 5:
        return Reply(content="All tests pass now.")
    if last in (None, "Bash"):
        return Reply(tool_calls=[("think", json.dumps({"thought": f"Fix number {edits} did not work; try another."}))])
    if last == "think":
        return Reply(
            tool_calls=[
                (
                    "Edit",
                    json.dumps({"file_path": "app/io.py", "old_string": f"v{edits}", "new_string": f"v{edits + 1}"}),
                )
            ]
        )
    return Reply(tool_calls=[("Bash", json.dumps({"command": "pytest -q tests/test_io.py"}))])


@pytest.mark.parametrize("stream", [False, True])
def test_different_fixes_with_the_same_failure_are_warned_never_refused(start_guarded, stream):
    edits = itertools.count(1)
    tests = {
        "Edit": lambda a: f"The file app/io.py has been updated ({next(edits)}).",
        "think": lambda a: "",
        "Bash": lambda a: "1 failed in 0.4s\nexit code 1",
    }
    upstream, client, _ = start_guarded(fix_think_test, DEFAULT)
    agent = Agent(client, tools=tests, stream=stream, specs=TOOLS)
    assert agent.run("fix the failing test", max_steps=40) == "All tests pass now."
    assert agent.executions["Edit"] == 5 and agent.executions["Bash"] == 5
    warned = [r for r in upstream.requests if "[LoopGuard" in json.dumps(r["json"]["messages"][-1:])]
    assert warned and not any(observations(r["json"]) for r in upstream.requests)
    if not stream:
        assert set(agent.actions) == {"pass", "warn"}


# --- across user turns ------------------------------------------------------------------------


def last_role(request: dict) -> str:
    """The role of the last message, LoopGuard's trailing warning left out."""
    return [m for m in request["messages"] if m.get("role") != "system"][-1].get("role")


def apologetic(request: dict) -> Reply:
    """Tries the update once per user message, apologises when it fails (or is refused)."""
    if last_role(request) == "tool":
        return Reply(content="I'm sorry, the update failed. Please let me know if I should try again.")
    return Reply(tool_calls=[("update_order", UPDATE)])


@pytest.mark.parametrize("stream", [False, True])
def test_the_same_failure_across_user_turns_is_warned_then_refused(start_guarded, stream):
    upstream, client, _ = start_guarded(apologetic, DEFAULT)
    agent = Agent(client, tools={"update_order": lambda a: LOCKED}, stream=stream, specs=TOOLS)
    agent.run("please change the item in my order")
    for _ in range(5):
        assert agent.run("please try again").startswith("I'm sorry")
    # Turn 3: the third failure, across three user turns, is warned; turn 6 is refused.
    assert agent.executions["update_order"] == 5
    anchors = [r for r in upstream.requests if "across user turns" in json.dumps(r["json"]["messages"][-1:])]
    assert anchors, "a warning naming the cross-turn repeat reached the model"
    if not stream:
        assert agent.actions.count("warn") == 3 and agent.actions[-1] == "reject" and "terminate" not in agent.actions


def two_tries_then_success(request: dict) -> Reply:
    if last_role(request) == "tool":
        result = [m for m in request["messages"] if m.get("role") == "tool"][-1]["content"]
        return Reply(content="Done." if "updated" in result else "Sorry, it failed.")
    return Reply(tool_calls=[("update_order", UPDATE)])


@pytest.mark.parametrize("stream", [False, True])
def test_a_retry_the_user_asked_for_that_works_runs_untouched(start_guarded, stream):
    results = iter([LOCKED, LOCKED, "Order updated.", LOCKED, "Order updated."])
    upstream, client, _ = start_guarded(two_tries_then_success, DEFAULT)
    agent = Agent(client, tools={"update_order": lambda a: next(results)}, stream=stream, specs=TOOLS)
    replies = [agent.run(text) for text in ("change my order", "try again", "try again", "and the other one", "again")]
    assert replies == ["Sorry, it failed.", "Sorry, it failed.", "Done.", "Sorry, it failed.", "Done."]
    assert not any("[LoopGuard" in json.dumps(r["json"]) for r in upstream.requests)


# --- stagnation -------------------------------------------------------------------------------

ASKS = [
    "Search for the refund policy for enterprise plans",
    "Please look up the refund policy for enterprise plans again",
    "Find the refund policy for enterprise plans on the website",
    "Check the website for the enterprise plans refund policy",
]
NOT_FOUND = (
    "I searched the company website for the refund policy for enterprise plans but could not find a page "
    "that describes it. The pricing page and the FAQ do not mention refunds for enterprise customers."
)


def reworder(request: dict) -> Reply:
    asked = calls_made(request, "research_agent")
    if asked == len(ASKS):
        return Reply(content="I could not find the policy.")
    return Reply(tool_calls=[("research_agent", json.dumps({"task": ASKS[asked]}))])


@pytest.mark.parametrize("stream", [False, True])
def test_reworded_requests_answered_the_same_are_warned_never_blocked(start_guarded, stream):
    wordings = iter(["could not find", "was unable to find", "could not find", "did not find"])
    tools = {"research_agent": lambda a: NOT_FOUND.replace("could not find", next(wordings))}
    upstream, client, _ = start_guarded(reworder, DEFAULT)
    agent = Agent(client, tools=tools, stream=stream, specs=TOOLS)
    assert agent.run("what is the enterprise refund policy?") == "I could not find the policy."
    assert agent.executions["research_agent"] == 4
    warned = [
        r
        for r in upstream.requests
        if "research_agent"
        in json.dumps(
            [m for m in r["json"]["messages"] if m.get("role") == "system" and "[LoopGuard]" in str(m.get("content"))]
        )
    ]
    assert len(warned) >= 1
    if not stream:
        assert agent.actions[-2:] == ["warn", "warn"] and set(agent.actions) <= {"pass", "warn"}


# --- retry with variation ---------------------------------------------------------------------

METHODS = [
    ("credit_card_4421", "Error: card declined by issuer"),
    ("paypal_1093", "Error: PayPal account is not linked to this user"),
    ("gift_card_7730", "Error: gift card balance $12.00 is insufficient"),
]


def payer(request: dict) -> Reply:
    tried = calls_made(request, "pay_order")
    if tried == len(METHODS):
        return Reply(content="None of your payment methods worked.")
    return Reply(tool_calls=[("pay_order", json.dumps({"order_id": "#W9", "payment_method_id": METHODS[tried][0]}))])


@pytest.mark.parametrize("stream", [False, True])
def test_paying_with_three_methods_each_rejected_runs_untouched(start_guarded, stream):
    errors = {m: e for m, e in METHODS}
    upstream, client, _ = start_guarded(payer, DEFAULT)
    agent = Agent(client, tools={"pay_order": lambda a: errors[a["payment_method_id"]]}, stream=stream, specs=TOOLS)
    assert agent.run("pay for my order") == "None of your payment methods worked."
    assert not any("[LoopGuard" in json.dumps(r["json"]) for r in upstream.requests)
    if not stream:
        assert set(agent.actions) == {"pass"}


# --- the veto holds whatever the warning placement ------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("placement", ["tool_result", "user", "system"])
def test_a_re_asked_identical_call_after_a_veto_ends_the_run(start_guarded, stream, placement):
    policy = ladder_policy(f"interventions:\n  warn:\n    placement: {placement}\n")
    upstream, client, _ = start_guarded(stubborn(), policy)
    agent = Agent(client, tools={"read_file": lambda a: "contents of a.txt"}, stream=stream)
    answer = agent.run("summarize a.txt")
    # Warned before the 4th call, which was vetoed; the identical re-asked call ended the run.
    assert agent.executions["read_file"] == 3
    assert answer and "stopped" in answer and "read_file" in answer
    assert "[LoopGuard]" in json.dumps(upstream.requests[3]["json"]["messages"][-1])
    if not stream:
        assert agent.actions[-1] == "terminate"


# --- two runs of the same task are two sessions -----------------------------------------------


def run_once(client, stream: bool, headers: dict | None = None) -> Agent:
    agent = Agent(client, tools={"read_file": lambda a: "same"}, stream=stream, headers=headers or {})
    agent.messages.append({"role": "system", "content": "You are a batch agent."})
    agent.run("summarize a.txt", max_steps=12)
    return agent


@pytest.mark.parametrize("stream", [False, True])
def test_a_second_run_of_the_same_task_is_judged_like_the_first(start_guarded, stream):
    # Nothing of the first run's session state is inherited. The fleet's recall (a new run of
    # the same agent told earlier of the loop its last run was stopped for: tests/fleet) is off.
    _upstream, client, _ = start_guarded(stubborn(), DEFAULT, config={"fleet": {"recall": False}})
    first, second = run_once(client, stream), run_once(client, stream)
    private = run_once(client, stream, {"x-loopguard-session": "run-3"})
    assert first.executions == second.executions == private.executions
    assert first.messages[-1] == second.messages[-1] == private.messages[-1]
    assert "compaction_loop_persisted" not in str(second.messages[-1].get("content"))
    if not stream:
        assert first.actions == second.actions == private.actions
        assert "warn" in second.actions  # warned before anything harsher, as in a private session


@pytest.mark.parametrize("stream", [False, True])
def test_a_new_run_is_no_compaction_even_with_only_the_compaction_guard(start_guarded, stream):
    only = "version: 1\nname: only-compaction\ndetectors:\n" + "".join(
        f"  {n}: false\n"
        for n in (
            "unknown_tool",
            "no_progress",
            "error_repeat",
            "cross_turn",
            "exact_repeat",
            "similar_repeat",
            "cycle",
            "stagnation",
        )
    )
    _upstream, client, _ = start_guarded(stubborn(), only)
    run_once(client, stream)
    second = run_once(client, stream)
    assert second.executions["read_file"] == 12  # ran to its own cap: never terminated
    if not stream:
        assert set(second.actions) == {"pass"}
