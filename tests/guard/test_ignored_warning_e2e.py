"""An ignored warning escalates: a coding agent retrying the same failing edit (each attempt a
little different) is warned, and when it goes on the gateway refuses and then ends the run, with
the shipped default policy, through the real gateway and the openai SDK. An agent that changes
approach after the warning, or whose next attempt works, hears nothing more."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from support.agent import Agent, declare
from support.seen import anchors, observations
from support.upstream import Reply

from gateway.audit.memory_sink import MemorySink

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")
EDITOR = "str_replace_editor"
REFUSED = "ERROR: No replacement was performed, old_str `{old}` did not appear verbatim in /repo/app.py."
# The same refusal as editors write it, with no error flag or prefix (OpenHands, SWE-agent), and
# one echoing the attempted code in a lint report: read as failures by the trace's vocabulary.
REFUSALS = [
    REFUSED,
    "No replacement was performed, old_str `{old}` did not appear verbatim in /repo/app.py.",
    "Your proposed edit has introduced new syntax error(s). Please read this error message carefully "
    "and then retry editing the file.\nERRORS:\n- E999 IndentationError: unexpected indent\n"
    "This is how your edit would have looked if applied\n{old}",
]


def edit(n: int, path: str = "/repo/app.py") -> tuple[str, str]:
    """The n-th attempt: another literally-escaped old_str each time."""
    return EDITOR, json.dumps(
        {
            "command": "str_replace",
            "path": path,
            "old_str": f"def total(items):\\n    return sum(items) + {n}",
            "new_str": "def total(items):\n    return sum(items)",
        }
    )


def editor(args: dict, refused: str = REFUSED) -> str:
    if args.get("command") == "view":
        return f"contents of {args['path']}:\n1 def total(items):\n2     return sum(items) + 1\n"
    if "\\n" in args.get("old_str", ""):
        return refused.format(old=args["old_str"])
    return f"The file {args['path']} has been edited. Here's the result of running `cat -n`: ..."


def tools(refused: str = REFUSED, **more):
    return {EDITOR: lambda args: editor(args, refused), "run_tests": lambda a: "3 passed in 0.12s", **more}


def run(start_guarded, responder, *, stream=False, max_steps=30, tool_impls=None):
    upstream, client, _ = start_guarded(responder, DEFAULT)
    events = MemorySink()
    client.gateway_app.state.gateway.audit.add(events)
    agent = Agent(
        client, tools=tool_impls or tools(), stream=stream, specs=declare(EDITOR, "run_tests", "write_file", "bash")
    )
    answer = agent.run("fix total() in app.py", max_steps=max_steps)
    return upstream, agent, events, answer


def closing(request: dict) -> Reply | None:
    """Every scripted model answers the final closed-tools request in words."""
    return Reply(content="I could not apply the edit.") if request.get("tool_choice") == "none" else None


def stubborn_editor(detour: bool = False):
    """Retries the failing edit with a new variation every time; with ``detour``, answers each
    veto by viewing the file first."""
    attempt = itertools.count(1)

    def respond(request):
        if (done := closing(request)) is not None:
            return done
        last = request["messages"][-1]
        if detour and last.get("role") == "tool" and observations({"messages": [last]}):
            return Reply(tool_calls=[(EDITOR, '{"command": "view", "path": "/repo/app.py"}')])
        return Reply(tool_calls=[edit(next(attempt))])

    return respond


def edits_run(agent) -> int:
    return agent.executions[EDITOR]


@pytest.mark.parametrize(
    ("stream", "refused"),
    [(False, REFUSALS[0]), (True, REFUSALS[0]), (False, REFUSALS[1]), (True, REFUSALS[2])],
    ids=["error", "error-streamed", "editor-text", "lint-echo-streamed"],
)
def test_a_varying_failing_edit_after_the_warning_is_refused_then_ended(start_guarded, stream, refused):
    upstream, agent, events, answer = run(start_guarded, stubborn_editor(), stream=stream, tool_impls=tools(refused))

    assert answer == "I could not apply the edit."
    # Warned after the 3rd refused edit, warned again after the 4th; the 5th and 6th are
    # vetoed, the 7th (no re-ask left) ends the run: 4 edits ran instead of the model's endless
    # stream of them.
    assert edits_run(agent) == 4
    # Each step is reported by the detector that asks most (the earlier one on a tie):
    # target_failure counts the failures on /repo/app.py, ignored_warning the continuations.
    assert [e.action for e in events.events] == ["warn", "warn", "reject", "reject", "terminate"]
    assert {e.detector for e in events.events} == {"target_failure", "ignored_warning"}
    if not stream:
        assert agent.actions == ["pass", "pass", "pass", "warn", "terminate"]
    assert anchors(upstream.requests[3]["json"])  # the warning reached the model


@pytest.mark.parametrize("stream", [False, True])
def test_a_view_after_each_veto_does_not_spend_the_warning(start_guarded, stream):
    _upstream, agent, events, answer = run(start_guarded, stubborn_editor(detour=True), stream=stream)

    assert answer == "I could not apply the edit."
    # Each veto is answered by a view (it runs: a view is not the warned edit), then the next
    # edit is refused again, until the 8th ends the run.
    # (target_failure, counting the failures on /repo/app.py, reports a step it also refuses.)
    refused = [(e.action, e.detector) for e in events.events if e.phase == "response"]
    assert [action for action, _ in refused] == ["reject", "reject", "reject", "terminate"]
    assert {detector for _, detector in refused} <= {"ignored_warning", "target_failure"}
    assert refused[0] == ("reject", "ignored_warning") and refused[-1] == ("terminate", "ignored_warning")
    assert edits_run(agent) == 4 + 3  # four edits and three views


def test_shell_retries_with_ever_more_flags_escalate(start_guarded):
    """No target to compare: `npm install` retried with one more flag each time."""
    flags = [
        "",
        " --registry=https://registry.example",
        " --fetch-timeout=60000",
        " --prefer-offline",
        " --legacy-peer-deps",
        " --no-audit",
        " --verbose",
        " --force",
        " --no-fund",
        " --ignore-scripts",
    ]
    attempt = itertools.count()

    def respond(request):
        if (done := closing(request)) is not None:
            return done
        n = min(next(attempt), len(flags))
        return Reply(tool_calls=[("bash", json.dumps({"command": "npm install package-a" + "".join(flags[:n])}))])

    _, agent, events, answer = run(
        start_guarded, respond, tool_impls={"bash": lambda a: "npm ERR! network timeout at registry"}
    )
    assert answer == "I could not apply the edit."
    # The same command head (`npm install`) failing: target_failure warns at the 3rd run, the
    # 4th is warned again, then the ignored warning's ladder refuses and ends the run.
    assert agent.executions["bash"] == 4
    assert [e.action for e in events.events] == ["warn", "warn", "reject", "reject", "terminate"]
    assert events.events[0].detector == "target_failure"
    assert "ignored_warning" in {e.detector for e in events.events}


# --- healthy look-alikes: the warning was heeded ------------------------------------------------


def heeding(after_warning: list[tuple[str, str]]):
    """Fails the edit until it is warned, then does ``after_warning`` one call at a time and
    answers."""
    attempt = itertools.count(1)
    plan = iter(after_warning)

    def respond(request):
        if (done := closing(request)) is not None:
            return done
        if any(anchors({"messages": [m]}) for m in request["messages"]) or respond.warned:
            respond.warned = True
            step = next(plan, None)
            return Reply(tool_calls=[step]) if step else Reply(content="fixed: tests pass")
        return Reply(tool_calls=[edit(next(attempt))])

    respond.warned = False
    return respond


@pytest.mark.parametrize("stream", [False, True])
def test_an_agent_that_views_the_file_and_edits_it_right_is_not_escalated(start_guarded, stream):
    right = (
        EDITOR,
        json.dumps(
            {
                "command": "str_replace",
                "path": "/repo/app.py",
                "old_str": "    return sum(items) + 1",
                "new_str": "    return sum(items)",
            }
        ),
    )
    more = (
        EDITOR,
        json.dumps(
            {
                "command": "str_replace",
                "path": "/repo/app.py",
                "old_str": "def total(items):",
                "new_str": "def total(items: list):",
            }
        ),
    )
    after = [
        (EDITOR, '{"command": "view", "path": "/repo/app.py"}'),
        right,
        ("run_tests", "{}"),
        more,
        ("run_tests", '{"path": "tests/"}'),
    ]
    _, _agent, events, answer = run(start_guarded, heeding(after), stream=stream)

    assert answer == "fixed: tests pass"
    assert [e.action for e in events.events] == ["warn"]
    assert not [e for e in events.events if e.detector == "ignored_warning"]


def test_an_agent_that_switches_tools_after_the_warning_is_not_escalated(start_guarded):
    whole = (
        "write_file",
        json.dumps({"path": "/repo/app.py", "content": "def total(items):\n    return sum(items)\n"}),
    )
    _, _agent, events, answer = run(
        start_guarded,
        heeding([whole, ("run_tests", "{}")]),
        tool_impls=tools(write_file=lambda a: "wrote 41 bytes to /repo/app.py"),
    )
    assert answer == "fixed: tests pass"
    assert [e.action for e in events.events] == ["warn"]


def test_a_later_failure_on_another_file_is_not_the_warned_pattern(start_guarded):
    """After the warning the agent fixes app.py; edits of other files fail now and then (each
    time once): nothing escalates."""
    right = (
        EDITOR,
        json.dumps(
            {
                "command": "str_replace",
                "path": "/repo/app.py",
                "old_str": "    return sum(items) + 1",
                "new_str": "    return sum(items)",
            }
        ),
    )
    after = [right] + [edit(100 + n, path=f"/repo/mod{n}.py") for n in range(4)] + [("run_tests", "{}")]
    _, _agent, events, answer = run(start_guarded, heeding(after))
    assert answer == "fixed: tests pass"
    assert not [e for e in events.events if e.detector == "ignored_warning"]
    assert {e.action for e in events.events} == {"warn"}


def test_a_new_user_prompt_is_a_new_run_with_no_warning_to_escalate(start_guarded):
    """The warning belongs to its run: after a new user message, two failing edits of the same
    file are two failures, not a warning ignored."""
    attempt = itertools.count(1)

    def respond(request):
        if (done := closing(request)) is not None:
            return done
        users = [m for m in request["messages"] if m.get("role") == "user"]
        if len(users) == 1 and not any(anchors({"messages": [m]}) for m in request["messages"]):
            return Reply(tool_calls=[edit(next(attempt))])
        if len(users) == 1:
            return Reply(content="giving up on this edit")
        edits = sum(
            1 for m in request["messages"][request["messages"].index(users[-1]) :] if m.get("role") == "assistant"
        )
        return Reply(tool_calls=[edit(100 + edits)]) if edits < 2 else Reply(content="still failing; will ask")

    _, agent, events, answer = run(start_guarded, respond)
    assert answer == "giving up on this edit"
    warned = len(events.events)
    assert agent.run("try the edit once more, differently") == "still failing; will ask"
    assert len(events.events) == warned  # nothing new: no ignored_warning in the new run
    assert agent.actions[-3:] == ["pass", "pass", "pass"]
